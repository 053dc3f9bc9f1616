# Asynchronous model averaging must train a BatchNormalization network as well as synchronous averaging:
# resnet20 on Fashion-MNIST padded to 32x32x3, 2 ranks, 4 epochs of 25 steps of 64 per rank, merging every
# 2 epochs (the averaging study, experiments/averaging.toml). Measured on a 2-vCPU VM: synchronous
# averaging every 2 epochs ends at 71.1 % test accuracy, this run at 72.0 %; a merge rule of deltas
# against the last take-back collapses it to 24.7 % (28.4 % at seed 1). The check asks for 60 %: far above
# a collapse, below the seeds' spread of a healthy run (gradient data parallelism: 70.2-76.1 % over 5 seeds).
# Needs Debian's dataset-fashion-mnist (ci/setup.sh installs it); without it the test is skipped, saying so.
# Asynchronous runs depend on when the merges land (timing), so the figure varies a little from run to run
# (71.8-72.0 % seen). Invoked by ctest with -DMPIEXEC -DFLAGS -DDTNN -DWORK; about 20 s on 2 cores.
set(data /usr/share/datasets/fashion-mnist)
if(NOT EXISTS ${data})
  message(STATUS "SKIPPED: ${data} is missing (install Debian's dataset-fashion-mnist)")
  return()
endif()
file(MAKE_DIRECTORY ${WORK})
set(report ${WORK}/async_resnet20.json)
file(REMOVE ${report})
execute_process(
  COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} train --parallel=data --model=resnet20_cifar10 --pad_to_cifar=True
          --dataset=mnist --dataset_train_path=${data} --model_averaging=asynchronous --average_every_epochs=2
          --num_epochs=4 --steps_per_epoch=25 --batch_size=64 --threads=1 --optimizer=sgd --learning_rate=0.01
          --momentum=0.9 --learning_rate_scaling=False --seed=0 --evaluate_on_test=True --progress=False
          --report=${report}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun dtnn train --model_averaging=asynchronous failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${report} json)
string(JSON acc GET "${json}" test categorical_accuracy)
string(JSON m0 GET "${json}" averaging merges_per_rank 0)
string(JSON m1 GET "${json}" averaging merges_per_rank 1)
if(NOT m0 EQUAL 2 OR NOT m1 EQUAL 2)
  message(FATAL_ERROR "asynchronous every 2 epochs of 4: merges per rank ${m0}, ${m1} (expected 2 each)")
endif()
# NOT ... GREATER_EQUAL: a null (NaN) accuracy reads as "", which is LESS than nothing and passed
if(NOT acc GREATER_EQUAL 60)  # percent, as the report gives it
  message(FATAL_ERROR "asynchronous resnet20 ended at test accuracy ${acc}: below 60 % (synchronous: 71 %)")
endif()
message(STATUS "mpi async resnet20 accuracy: ${acc} (>= 60 %), merges ${m0} + ${m1}")
