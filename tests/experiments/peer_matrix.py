"""The small matrix the peer tests run through `dtnn run` (test_torch_ddp.py, test_pydtnn_runner.py): simplecnn
on Fashion-MNIST, Adam, 10 steps of 32 per rank, one thread, no test pass, with the caller's [axes] (and
includes) appended. run_matrix returns the finished process and the database, opened."""
import os
import sqlite3
import subprocess

DATA = "/usr/share/datasets/fashion-mnist"


def run_matrix(dtnn, work, name, axes, env):
    matrix = os.path.join(work, name + ".toml")
    with open(matrix, "w") as f:
        f.write(f'''name = "{name}"
repeats = 1
timeout_s = 300
[base]
model = "simplecnn"
dataset = "mnist"
dataset_train_path = "{DATA}"
optimizer = "adam"
learning_rate = 0.001
batch_size = 32
num_epochs = 1
steps_per_epoch = 10
threads = 1
evaluate_on_test = false
{axes}''')
    db = os.path.join(work, name + ".db")
    p = subprocess.run([dtnn, "run", matrix, "--db", db], capture_output=True, text=True, env=env, timeout=900)
    return p, sqlite3.connect(db)
