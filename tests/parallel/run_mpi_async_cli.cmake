# `dtnn train --model_averaging=asynchronous|partially_asynchronous` under mpirun -np 2 with a straggler:
# rank 1 sleeps 40 ms before each of its 4 steps per epoch (2 epochs). The report must count each rank's
# merges (asynchronous: one per epoch; partially asynchronous every 2 steps: 4), bytes that are a whole
# number of (delta out + general back) slabs per merge, and rank 0 must not wait for rank 1: its time inside
# the merges stays well under the straggler's lag (a synchronous average would wait ~160 ms per epoch, 0.32 s
# in all; the check allows 0.1 s). Invoked by ctest with -DMPIEXEC -DFLAGS -DDTNN -DWORK.
file(MAKE_DIRECTORY ${WORK})
foreach(mode asynchronous partially_asynchronous)
  set(report ${WORK}/${mode}.json)
  file(REMOVE ${report})
  set(period "")
  set(expected 2)
  if(mode STREQUAL "partially_asynchronous")
    set(period --average_every_steps=2)
    set(expected 4)
  endif()
  execute_process(
    COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} train --parallel=data --model=simplecnn --use_synthetic_data=True
            --model_averaging=${mode} ${period} --num_batches_per_worker=4 --num_epochs=2 --batch_size=16 --threads=1
            --optimizer=sgd --straggler_ms=1:40 --evaluate_on_test=True --progress=False --report=${report}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mpirun dtnn train --model_averaging=${mode} failed (${rc}):\n${out}\n${err}")
  endif()
  file(READ ${report} json)
  string(JSON got GET "${json}" parallel model_averaging)
  string(JSON m0 GET "${json}" averaging merges_per_rank 0)
  string(JSON m1 GET "${json}" averaging merges_per_rank 1)
  string(JSON averages GET "${json}" averaging averages)
  string(JSON bytes GET "${json}" averaging bytes_per_rank)
  string(JSON wait0 GET "${json}" averaging wait_s_rank0)
  if(NOT got STREQUAL mode OR NOT m0 EQUAL expected OR NOT m1 EQUAL expected OR NOT averages EQUAL expected)
    message(FATAL_ERROR "${mode}: merges per rank ${m0}, ${m1}, rank 0's ${averages} (expected ${expected} each)")
  endif()
  math(EXPR slab "${bytes} / ${averages}")
  math(EXPR whole "${slab} * ${averages}")
  math(EXPR eights "${slab} % 8")
  if(NOT bytes GREATER 0 OR NOT whole EQUAL bytes OR NOT eights EQUAL 0)
    message(FATAL_ERROR "${mode}: ${bytes} bytes is not ${averages} merges of 8 bytes per float")
  endif()
  if(NOT wait0 LESS_EQUAL 0.1)  # (a null reads as "": the NOT form fails on it)
    message(FATAL_ERROR "${mode}: rank 0 spent ${wait0} s in its merges: it waited for the straggler")
  endif()
  if(NOT out MATCHES "merges per rank \\(asynchronous\\): ${expected} ${expected}")
    message(FATAL_ERROR "${mode}: no 'merges per rank' line:\n${out}")
  endif()
  message(STATUS "mpi async cli ${mode}: ok (${m0} + ${m1} merges, ${bytes} bytes, rank 0 waited ${wait0} s)")
endforeach()
# Rank 1 diverges alone (an MPMD job: its learning rate is 3e38) while rank 0's own loss stays finite; in the
# asynchronous modes each rank judges its own loss. The merged model is then NaN: the job must end (not wait
# in rank 0's test pass for a rank that left), exit non-zero, rank 0's report must say "diverged on rank 1",
# and no weights file may be written from it.
set(report ${WORK}/diverged.json)
set(weights ${WORK}/diverged_weights.npz)
file(REMOVE ${report} ${weights})
set(args train --parallel=data --model=simplemlp --use_synthetic_data=True --model_averaging=asynchronous
    --num_batches_per_worker=4 --num_epochs=1 --batch_size=16 --threads=1 --optimizer=sgd --evaluate_on_test=True
    --progress=False)
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${args} --report=${report} --weights_and_bias_filename=${weights}
          : -np 1 ${DTNN} ${args} --learning_rate=3e38
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 90)
if(rc EQUAL 0 OR NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "asynchronous, rank 1 diverged: exit '${rc}' (expected a non-zero exit, not 0 or a timeout):\n${out}\n${err}")
endif()
if(NOT EXISTS ${report})
  message(FATAL_ERROR "asynchronous, rank 1 diverged: rank 0 wrote no report:\n${out}\n${err}")
endif()
file(READ ${report} json)
string(JSON status GET "${json}" status)
string(JSON why GET "${json}" error)
if(NOT status STREQUAL "diverged" OR NOT why MATCHES "^diverged on rank 1: the training loss")
  message(FATAL_ERROR "asynchronous, rank 1 diverged: report status '${status}', error '${why}'")
endif()
if(EXISTS ${weights})
  message(FATAL_ERROR "asynchronous, rank 1 diverged: rank 0 saved the merged weights")
endif()
message(STATUS "mpi async cli: rank 1 alone diverged: exit ${rc}, rank 0's report '${why}'")
