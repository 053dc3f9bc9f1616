"""Labels of the report's configuration groups (analysis/plots/report_format.py), against labels written here
by hand: groups that differ only in their config_key are told apart by the names whose values differ, never
by the whole key (unreadable on a chart). Usage: test_report_format.py SOURCE_DIR"""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "analysis", "plots"))
from report_format import key_differences, labels_for  # noqa: E402

failed = 0


def check(got, want, what):
    global failed
    ok = got == want
    failed += not ok
    print(f"{'ok' if ok else 'FAILED'}: {what}: {got!r}" + ("" if ok else f", expected {want!r}"))


base = "batch_size=64;model=simplecnn;optimizer=sgd"
check(key_differences([base, base + ";transport=tcp", base.replace("64", "32")]),
      ["batch_size=64, transport=default", "batch_size=64, transport=tcp", "batch_size=32, transport=default"],
      "names whose values differ, a missing name as its default")
check(key_differences([base, base]), ["(base)", "(base)"], "nothing differs")
check(key_differences(["a=x=y;b=1", "a=x=z;b=1"]), ["a=x=y", "a=x=z"], "a value holding '=' stays whole")
groups = [{"model": "simplecnn", "config_key": base + ";non_blocking_mpi=True;scaling=strong"},
          {"model": "simplecnn", "config_key": base + ";scaling=strong"},
          {"model": "resnet20_cifar10", "config_key": base}]
check(labels_for(groups, ["model"], ["model"], extra=("config_key",)),
      ["model=simplecnn [non_blocking_mpi=True]", "model=simplecnn [non_blocking_mpi=default]",
       "model=resnet20_cifar10"],
      "two simplecnn groups told apart by the key names that differ between them")
print(f"{4 - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
