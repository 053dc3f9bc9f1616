# `dtnn train --model_averaging=synchronous` under mpirun -np 2 with a straggler: averages every 2 steps
# of 4 batches per worker for 2 epochs (2 averages per epoch, none left for the end), the sgd rate not
# scaled (each rank trains its own --batch_size), and the report's averaging figures: counts, bytes that
# are a whole number of parameter slabs per average, and rank 0 waiting in the averages for rank 1, which
# sleeps 40 ms before each of its steps (2 steps between averages: rank 0 waits about 80 ms per average;
# the check asks for half of the 4 x 80 ms). Invoked by ctest with -DMPIEXEC -DFLAGS -DDTNN -DWORK.
file(MAKE_DIRECTORY ${WORK})
file(REMOVE ${WORK}/report.json)
execute_process(
  COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} train --parallel=data --model=simplecnn --use_synthetic_data=True
          --model_averaging=synchronous --average_every_steps=2 --num_batches_per_worker=4 --num_epochs=2
          --batch_size=16 --threads=1 --optimizer=sgd --straggler_ms=1:40 --evaluate_on_test=False
          --progress=False --report=${WORK}/report.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun dtnn train --model_averaging failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK}/report.json report)
string(JSON mode GET "${report}" parallel model_averaging)
string(JSON averages GET "${report}" averaging averages)
string(JSON bytes GET "${report}" averaging bytes_per_rank)
string(JSON wait0 GET "${report}" averaging wait_s_rank0)
string(JSON epoch_averages GET "${report}" epochs 0 averaging averages)
string(JSON samples GET "${report}" epochs 0 samples)
string(JSON lr GET "${report}" epochs 0 lr)
if(NOT mode STREQUAL "synchronous" OR NOT averages EQUAL 4 OR NOT epoch_averages EQUAL 2 OR NOT samples EQUAL 128)
  message(FATAL_ERROR "report: mode ${mode}, ${averages} averages (expected 4), ${epoch_averages} in epoch 1 "
                      "(expected 2), ${samples} samples (expected 2 ranks x 4 x 16 = 128)")
endif()
if(NOT lr STREQUAL "0.01")
  message(FATAL_ERROR "model averaging must not scale the sgd rate (each rank trains its own batch): lr ${lr}")
endif()
math(EXPR slab_bytes "${bytes} / ${averages}")
math(EXPR whole "${slab_bytes} * ${averages}")
if(NOT bytes GREATER 0 OR NOT whole EQUAL bytes)
  message(FATAL_ERROR "bytes per rank ${bytes} is not ${averages} equal averages")
endif()
if(NOT wait0 GREATER_EQUAL 0.16)  # (a null reads as "": the NOT form fails on it)
  message(FATAL_ERROR "rank 0 waited ${wait0} s in the averages; rank 1's 40 ms sleeps should make it ~0.32 s")
endif()
string(REGEX MATCHALL "  averaging: 2 averages" per_epoch "${out}")
list(LENGTH per_epoch n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "expected one averaging line per epoch from rank 0, got ${n}:\n${out}")
endif()
message(STATUS "mpi averaging cli: ok (${averages} averages, ${bytes} bytes per rank, rank 0 waited ${wait0} s)")

# warm_up counts the steps a rank runs (--num_batches_per_worker = 2 a epoch, W = 2 for one warm-up epoch):
# lr0 / 2 ranks before step 0, 0.0075 before step 1 (epoch 1's rate), lr0 from step 2. It counted the global
# batches of the training set (60000 / 16: W = 3750, the rate stuck near 0.005 for 1875 epochs).
file(REMOVE ${WORK}/warm_up.json)
execute_process(
  COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} train --parallel=data --model=simplemlp --use_synthetic_data=True
          --model_averaging=synchronous --num_batches_per_worker=2 --num_epochs=2 --batch_size=8 --threads=1
          --optimizer=sgd --learning_rate=0.01 --lr_schedulers=warm_up --warm_up_epochs=1 --evaluate_on_test=False
          --progress=False --report=${WORK}/warm_up.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun dtnn train --model_averaging with warm_up failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK}/warm_up.json report)
string(JSON lr1 GET "${report}" epochs 0 lr)
string(JSON lr2 GET "${report}" epochs 1 lr)
if(NOT (lr1 GREATER_EQUAL 0.0074999 AND lr1 LESS_EQUAL 0.0075001) OR NOT lr2 STREQUAL "0.01")
  message(FATAL_ERROR "warm_up over 2 steps an epoch: epoch rates ${lr1}, ${lr2} (expected 0.0075, 0.01)")
endif()
message(STATUS "mpi averaging cli: warm_up over the rank's own steps (rates ${lr1}, ${lr2})")
