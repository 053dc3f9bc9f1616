# `dtnn train --parallel=data` under mpirun -np 2: it must succeed, print once (rank 0 only) and write a
# report that records 2 ranks. Invoked by ctest with -DMPIEXEC -DFLAGS -DDTNN -DWORK.
file(MAKE_DIRECTORY ${WORK})
file(REMOVE ${WORK}/report.json)
execute_process(
  COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} train --parallel=data --model=simplecnn --use_synthetic_data=True
          --steps_per_epoch=4 --num_epochs=1 --threads=1 --optimizer=sgd --report=${WORK}/report.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun dtnn train failed (${rc}):\n${out}\n${err}")
endif()
# mpirun gives rank 0 a pseudo-terminal for stdout even when its own output is a pipe (as here): plain lines, not
# the live bar's carriage returns and escapes.
string(FIND "${out}" "\r" cr)
string(ASCII 27 escape)
string(FIND "${out}" "${escape}[K" esc)
if(NOT cr EQUAL -1 OR NOT esc EQUAL -1)
  message(FATAL_ERROR "the live progress bar went to mpirun's piped output:\n${out}")
endif()
string(REGEX MATCHALL "Total parameters" tables "${out}")
list(LENGTH tables n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one model table (rank 0 only), got ${n}:\n${out}")
endif()
file(READ ${WORK}/report.json report)
string(JSON ranks GET "${report}" parallel ranks)
string(JSON samples GET "${report}" training samples)
if(NOT ranks EQUAL 2 OR NOT samples EQUAL 512)
  message(FATAL_ERROR "report says ranks=${ranks} samples=${samples}, expected 2 and 512 (4 steps x 2 x 64)")
endif()
if(report MATCHES "weights_differ_after_epoch" OR out MATCHES "differ from rank 0's")
  message(FATAL_ERROR "two CPU ranks' weights were found apart after an epoch (they are equal by construction)")
endif()
# PyDTNN's learning-rate scaling: sgd with --parallel=data multiplies lr by the rank count.
string(JSON lr GET "${report}" epochs 0 lr)
if(NOT lr STREQUAL "0.02")
  message(FATAL_ERROR "expected the sgd learning rate scaled to 0.02 on 2 ranks, got ${lr}")
endif()
# The report keeps the rate as given beside the rate as run: targets state recipes as given (analysis/targets.cpp).
string(JSON lr_run GET "${report}" options learning_rate)
string(JSON lr_given GET "${report}" options_given learning_rate)
if(NOT lr_run STREQUAL "0.02" OR NOT lr_given STREQUAL "0.01")
  message(FATAL_ERROR "report's options.learning_rate ${lr_run} (0.02 as run), options_given ${lr_given} (0.01 given)")
endif()
message(STATUS "mpi cli: ok (ranks ${ranks}, samples ${samples}, lr ${lr})")
# The communication measured on every rank: blocking mode, one bucket, rank 0's and the ranks' median
# figures, printed once by rank 0.
string(JSON mode GET "${report}" epochs 0 communication mode)
string(JSON buckets GET "${report}" epochs 0 communication buckets_per_step)
string(JSON steps GET "${report}" epochs 0 communication steps)
string(JSON exposed GET "${report}" epochs 0 communication median exposed_s)
if(NOT mode STREQUAL "blocking" OR NOT buckets EQUAL 1 OR NOT steps EQUAL 4 OR NOT exposed GREATER 0)
  message(FATAL_ERROR "report's communication: mode ${mode}, ${buckets} bucket(s), ${steps} steps, exposed ${exposed} s")
endif()
string(REGEX MATCHALL "\\*\\*\\*\\* Communication \\(blocking" printed "${out}")
list(LENGTH printed n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one communication summary (rank 0), got ${n}:\n${out}")
endif()
message(STATUS "mpi cli: communication ok (${mode}, exposed ${exposed} s)")
# PyDTNN's --blocking_mpi is --non_blocking_mpi's negation: =False asks for the bucketed reduction.
file(REMOVE ${WORK}/report_nb.json)
execute_process(
  COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} train --parallel=data --model=simplecnn --use_synthetic_data=True
          --steps_per_epoch=2 --num_epochs=1 --threads=1 --optimizer=sgd --evaluate_on_test=False
          --blocking_mpi=False --gradient_bucket_mb=0 --report=${WORK}/report_nb.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--blocking_mpi=False failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${WORK}/report_nb.json report)
string(JSON mode GET "${report}" epochs 0 communication mode)
string(JSON buckets GET "${report}" epochs 0 communication buckets_per_step)
if(NOT mode STREQUAL "non_blocking" OR NOT buckets GREATER 1)
  message(FATAL_ERROR "--blocking_mpi=False: mode ${mode}, ${buckets} bucket(s); expected non_blocking, one per layer")
endif()
message(STATUS "mpi cli: --blocking_mpi=False ran ${mode} with ${buckets} buckets")
# A job of several commands (mpirun's MPMD form, as a GPU rank beside CPU ranks is started) whose ranks
# build the model in different layouts: refused before training, with the difference named, not trained on
# garbled gradient sums.
set(args train --parallel=data --model=simplecnn --use_synthetic_data=True --steps_per_epoch=2 --num_epochs=1
    --threads=1 --optimizer=sgd --evaluate_on_test=False)
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${args} --tensor_format=NHWC : -np 1 ${DTNN} ${args} --tensor_format=NCHW
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "rank 1 does not train as rank 0: tensor format NCHW where rank 0 has NHWC")
  message(FATAL_ERROR "ranks in two layouts: exit ${rc}, expected a refusal naming the layouts:\n${out}\n${err}")
endif()
if(out MATCHES "Epoch 1/1")
  message(FATAL_ERROR "ranks in two layouts trained:\n${out}")
endif()
message(STATUS "mpi cli: ranks in two layouts refused")
# Ranks given different batch shares would train some samples twice: refused the same way.
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${args} --rank_batch_shares=3,1 : -np 1 ${DTNN} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "rank 1 does not train as rank 0: batch shares")
  message(FATAL_ERROR "ranks with different batch shares: exit ${rc}, expected a refusal:\n${out}\n${err}")
endif()
message(STATUS "mpi cli: ranks with different batch shares refused")
# Weights that split a full batch alike (3,1 and 2.9,1: 96 + 32 of 128) but a short one not (10: 8 + 2 vs
# 7 + 3) are refused too: the fingerprint is of the weights every split comes from.
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${args} --rank_batch_shares=3,1 : -np 1 ${DTNN} ${args} --rank_batch_shares=2.9,1
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "rank 1 does not train as rank 0: batch shares")
  message(FATAL_ERROR "ranks with shares 3,1 and 2.9,1: exit ${rc}, expected a refusal:\n${out}\n${err}")
endif()
message(STATUS "mpi cli: ranks with shares that differ only on short batches refused")
# Ranks reducing gradients differently (one blocking allreduce of the slab against per-bucket requests) would
# hang or sum garbage: the option that differs is named, before training.
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${args} --non_blocking_mpi=True : -np 1 ${DTNN} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(rc EQUAL 0 OR NOT err MATCHES "rank 1 does not train as rank 0: --non_blocking_mpi=False where rank 0 has --non_blocking_mpi=True")
  message(FATAL_ERROR "ranks with and without --non_blocking_mpi: exit ${rc}, expected a refusal naming it:\n${out}\n${err}")
endif()
if(out MATCHES "Epoch 1/1")
  message(FATAL_ERROR "ranks with and without --non_blocking_mpi trained:\n${out}")
endif()
message(STATUS "mpi cli: ranks with and without --non_blocking_mpi refused")
# One rank sequential beside a data-parallel one: it trained alone while the other waited for it in MPI_Init.
# Refused by every rank, said once (by rank 0), in bounded time.
string(REPLACE "--parallel=data" "--parallel=sequential" sequential_args "${args}")
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${args} : -np 1 ${DTNN} ${sequential_args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
string(REGEX MATCHALL "--parallel=data on some ranks of this job and sequential on others" said "${err}")
list(LENGTH said times)
if(rc EQUAL 0 OR NOT times EQUAL 1 OR out MATCHES "Epoch 1/1")
  message(FATAL_ERROR "ranks with --parallel=data and sequential: exit ${rc}, expected one refusal:\n${out}\n${err}")
endif()
message(STATUS "mpi cli: ranks with --parallel=data and sequential refused once")
# A refusal of the command line itself comes from every rank of a one-command job alike: rank 0 says it once.
# An MPMD job's ranks may be refused for different reasons, so each of them still says its own.
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 2 ${DTNN} ${args} --batch_size=-3
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
string(REGEX MATCHALL "dtnn: --batch_size: expected an integer" said "${err}")
list(LENGTH said times)
if(rc EQUAL 0 OR NOT times EQUAL 1)
  message(FATAL_ERROR "mpirun -np 2 with --batch_size=-3: exit ${rc}, expected one refusal:\n${out}\n${err}")
endif()
message(STATUS "mpi cli: a refused command line said once for all ranks")
# A rank that never joins (a peer program that is not dtnn) left the other in MPI_Init forever: the wait is
# bounded (DTNN_MPI_INIT_TIMEOUT_S), said in one line, and the job ends. The peer sleeps rather than exits: one
# that exits at once races the bound, since mpiexec may abort the job itself ("exiting improperly") first.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env DTNN_MPI_INIT_TIMEOUT_S=3
          ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${args} : -np 1 ${CMAKE_COMMAND} -E sleep 30
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(rc EQUAL 0 OR NOT err MATCHES "joining the MPI job \\(MPI_Init\\) did not end in 3 s")
  message(FATAL_ERROR "a peer that exits before MPI_Init: exit ${rc}, expected a bounded wait:\n${out}\n${err}")
endif()
message(STATUS "mpi cli: a rank that never joins ends the job in bounded time")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env DTNN_MPI_INIT_TIMEOUT_S=soon ${MPIEXEC} ${FLAGS} -np 2 ${DTNN} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(rc EQUAL 0 OR NOT err MATCHES "DTNN_MPI_INIT_TIMEOUT_S: expected a number of seconds")
  message(FATAL_ERROR "DTNN_MPI_INIT_TIMEOUT_S=soon: exit ${rc}, expected a refusal:\n${out}\n${err}")
endif()
# Options the check did not compare: early stopping on one rank left the epoch loop for a barrier while the
# other entered the next allreduce (a hang); tracing or profiling (clock syncing) on one rank only, likewise; another learning
# rate left the ranks' weights apart for the rest of the run; an output named on rank 1 alone was never written.
foreach(pair "--lr_schedulers=early_stopping|--lr_schedulers=early_stopping where rank 0 has --lr_schedulers="
             "--profile=True|--profile=True where rank 0 has --profile=False"
             "--learning_rate=0.02|--learning_rate=0.02 where rank 0 has --learning_rate=0.01"  # as given, not scaled
             # compared by option, not by position: averaging leaves the update rule out of rank 1's list
             "--model_averaging=synchronous|--model_averaging=synchronous where rank 0 has --model_averaging=none"
             # only rank 0 writes outputs: one named on rank 1 alone was silently never written
             "--report=${WORK}/r1.json|--report=${WORK}/r1.json where rank 0 names none")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 option)
  list(GET pair 1 expected)
  execute_process(
    COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${args} : -np 1 ${DTNN} ${args} ${option}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(rc EQUAL 0 OR NOT err MATCHES "rank 1 does not train as rank 0: ${expected}" OR out MATCHES "Epoch 1/1")
    message(FATAL_ERROR "rank 1 alone with ${option}: exit ${rc}, expected a refusal naming it:\n${out}\n${err}")
  endif()
  message(STATUS "mpi cli: rank 1 alone with ${option} refused")
endforeach()
# Ranks reading datasets of other sizes (a node-local copy with files missing) shuffle pools of other sizes:
# samples trained twice and others never, or unequal step counts that died inside MPI_Allreduce with
# MPI_ERR_TRUNCATE. Refused before training, naming the counts. (Fashion-MNIST: Debian's dataset-fashion-mnist,
# which ci/setup.sh installs.)
set(fashion /usr/share/datasets/fashion-mnist)
if(EXISTS ${fashion}/train-images-idx3-ubyte.gz)
  set(data_args train --parallel=data --model=simplecnn --dataset=mnist --steps_per_epoch=2 --num_epochs=1
      --threads=1 --optimizer=sgd --evaluate_on_test=False)
  # Every rank's own stderr must name the counts: rank 0 (which differs from nobody) once said only "1 rank
  # does not train as rank 0" and aborted the job before rank 1's line got out (a CI run lost the counts).
  file(REMOVE_RECURSE ${WORK}/per_rank)
  execute_process(
    COMMAND ${MPIEXEC} ${FLAGS} --output-filename ${WORK}/per_rank
            -np 1 ${DTNN} ${data_args} --dataset_train_path=${SRC}/experiments/datasets/mnist-10k
            : -np 1 ${DTNN} ${data_args} --dataset_train_path=${fashion}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  set(counts "rank 1 does not train as rank 0: training samples 60000 where rank 0 has 8000")
  if(rc EQUAL 0 OR NOT err MATCHES "${counts}")
    message(FATAL_ERROR "ranks on datasets of 8000 and 60000 samples: exit ${rc}, expected a refusal naming the "
                        "counts:\n${out}\n${err}")
  endif()
  file(GLOB_RECURSE rank0_err ${WORK}/per_rank/*/rank.0/stderr)
  if(NOT rank0_err)
    message(FATAL_ERROR "mpirun --output-filename wrote no rank.0/stderr under ${WORK}/per_rank")
  endif()
  file(READ "${rank0_err}" rank0_text)
  if(NOT rank0_text MATCHES "${counts}")
    message(FATAL_ERROR "rank 0's own refusal does not name rank 1's counts:\n${rank0_text}")
  endif()
  message(STATUS "mpi cli: ranks on datasets of other sizes refused")
  # Equal counts, other contents: a copy of mnist-10k with every training label moved by one trained with
  # exit 0 beside the real one (only the counts were compared).
  set(src ${SRC}/experiments/datasets/mnist-10k)
  file(REMOVE_RECURSE ${WORK}/shifted)
  file(MAKE_DIRECTORY ${WORK}/shifted)
  file(COPY ${src}/train-images-idx3-ubyte.gz ${src}/t10k-images-idx3-ubyte.gz ${src}/t10k-labels-idx1-ubyte.gz
       DESTINATION ${WORK}/shifted)
  execute_process(COMMAND /usr/bin/python3 -c "import gzip,sys; b=bytearray(gzip.open(sys.argv[1]).read()); \
b[8:]=bytes((v+1)%10 for v in b[8:]); gzip.open(sys.argv[2],'wb').write(bytes(b))"
                          ${src}/train-labels-idx1-ubyte.gz ${WORK}/shifted/train-labels-idx1-ubyte.gz
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not write the shifted copy of mnist-10k")
  endif()
  execute_process(
    COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${data_args} --dataset_train_path=${src}
            : -np 1 ${DTNN} ${data_args} --dataset_train_path=${WORK}/shifted
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(rc EQUAL 0 OR NOT err MATCHES "rank 1 does not train as rank 0: training data \\(fingerprint of the first samples\\)"
     OR out MATCHES "Epoch 1/1")
    message(FATAL_ERROR "ranks on mnist-10k and a copy with other labels: exit ${rc}, expected a refusal:\n${out}\n${err}")
  endif()
  message(STATUS "mpi cli: ranks on datasets of equal size and other contents refused")
else()
  message(FATAL_ERROR "${fashion} is missing: ci/setup.sh installs dataset-fashion-mnist")
endif()
# MNIST files padded to CIFAR's shape under uneven shares: rank 0 takes 24 of each 32 samples, more than
# --batch_size=16; the padding's buffers are the model's batch (this aborted on an internal check).
execute_process(
  COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} train --parallel=data --model=vgg1 --dataset=mnist --pad_to_cifar=True
          --dataset_train_path=${SRC}/experiments/datasets/mnist-10k --batch_size=16 --rank_batch_shares=3,1
          --steps_per_epoch=2 --num_epochs=1 --threads=1 --evaluate_on_test=False
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT out MATCHES "Rank batch shares")
  message(FATAL_ERROR "--pad_to_cifar with --rank_batch_shares=3,1: exit ${rc}:\n${out}\n${err}")
endif()
message(STATUS "mpi cli: --pad_to_cifar with uneven shares trains")
# Uneven shares over per-rank BatchNormalization: the update is not exactly the global batch's, and the
# run says so when it starts; with --sync_batchnorm it is, and says nothing.
set(bn_args train --parallel=data --model=resnet20_cifar10 --dataset=cifar10 --use_synthetic_data=True --steps_per_epoch=1
    --num_epochs=1 --threads=1 --optimizer=sgd --batch_size=8 --evaluate_on_test=False --rank_batch_shares=3,1)
foreach(sync False True)
  execute_process(COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} ${bn_args} --sync_batchnorm=${sync}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "Note: --rank_batch_shares=3,1 with per-rank BatchNormalization" notes "${out}")
  list(LENGTH notes n)
  if(NOT rc EQUAL 0 OR (sync STREQUAL "False" AND NOT n EQUAL 1) OR (sync STREQUAL "True" AND NOT n EQUAL 0))
    message(FATAL_ERROR "shares 3,1 on resnet20, --sync_batchnorm=${sync}: exit ${rc}, ${n} note(s):\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "mpi cli: uneven shares over per-rank BatchNormalization noted once, not with --sync_batchnorm")
# Ranks resuming other checkpoints: one at epoch 1 beside one at epoch 2 trained an epoch more and hung in
# the others' last allreduce; two runs' checkpoints of one epoch trained apart with exit 0. Refused before
# loading; a copy of rank 0's file (a node-local disk) is the same checkpoint.
set(ck_args train --parallel=data --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --threads=1
    --optimizer=sgd --evaluate_on_test=False)
file(REMOVE ${WORK}/ck1.npz ${WORK}/ck2.npz ${WORK}/ck1_copy.npz)
execute_process(COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} ${ck_args} --num_epochs=1 --checkpoint_file=${WORK}/ck1.npz
                RESULT_VARIABLE rc1 OUTPUT_QUIET ERROR_VARIABLE err1 TIMEOUT 120)
execute_process(COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} ${ck_args} --num_epochs=2 --resume_from=${WORK}/ck1.npz
                        --checkpoint_file=${WORK}/ck2.npz
                RESULT_VARIABLE rc2 OUTPUT_QUIET ERROR_VARIABLE err2 TIMEOUT 120)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
  message(FATAL_ERROR "checkpoints for the resume check: exit ${rc1}, ${rc2}:\n${err1}\n${err2}")
endif()
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${ck_args} --num_epochs=3 --resume_from=${WORK}/ck1.npz
          : -np 1 ${DTNN} ${ck_args} --num_epochs=3 --resume_from=${WORK}/ck2.npz
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(rc EQUAL 0 OR NOT err MATCHES "rank 1 resumes from another checkpoint than rank 0: --resume_from=${WORK}/ck2.npz")
  message(FATAL_ERROR "ranks resuming epoch 1 and epoch 2: exit ${rc}, expected a refusal:\n${out}\n${err}")
endif()
file(COPY_FILE ${WORK}/ck1.npz ${WORK}/ck1_copy.npz)
execute_process(
  COMMAND ${MPIEXEC} ${FLAGS} -np 1 ${DTNN} ${ck_args} --num_epochs=2 --resume_from=${WORK}/ck1.npz
          : -np 1 ${DTNN} ${ck_args} --num_epochs=2 --resume_from=${WORK}/ck1_copy.npz
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT out MATCHES "Resuming from ${WORK}/ck1.npz after epoch 1")
  message(FATAL_ERROR "ranks resuming one checkpoint and its copy: exit ${rc}:\n${out}\n${err}")
endif()
message(STATUS "mpi cli: ranks resuming other checkpoints refused, a copy of the same accepted")
# --allreduce_dtype=bfloat16: the gradients travel as bf16 (2 bytes each, the loss and metric tail as float32), in
# both reductions; the run trains as usual.
foreach(mode False True)
  file(REMOVE ${WORK}/float32_wire.json ${WORK}/bfloat16_wire.json)
  foreach(wire float32 bfloat16)
    execute_process(
      COMMAND ${MPIEXEC} -np 2 ${FLAGS} ${DTNN} train --parallel=data --model=simplecnn --use_synthetic_data=True
              --steps_per_epoch=4 --num_epochs=1 --threads=1 --optimizer=sgd --non_blocking_mpi=${mode}
              --allreduce_dtype=${wire} --report=${WORK}/${wire}_wire.json
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "--allreduce_dtype=${wire} --non_blocking_mpi=${mode} failed (${rc}):\n${out}\n${err}")
    endif()
  endforeach()
  # float32: 4 bytes per gradient and tail float; bf16: 2 per gradient, 4 per tail float (a few loss and metric sums).
  execute_process(COMMAND /usr/bin/python3 -c "import json,sys; b=[json.load(open(f))['epochs'][0]['communication']\
['bytes_per_step'] for f in sys.argv[1:]]; tail=(2*b[1]-b[0])/4; sys.exit(not (0 < tail <= 16 and b[1] < b[0]))"
                          ${WORK}/float32_wire.json ${WORK}/bfloat16_wire.json RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--non_blocking_mpi=${mode}: the bf16 wire's bytes per step are not half the gradients'")
  endif()
endforeach()
execute_process(COMMAND ${DTNN} train --model=simplecnn --use_synthetic_data=True --steps_per_epoch=1
                        --allreduce_dtype=bfloat16 --model_averaging=synchronous
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "--allreduce_dtype=bfloat16 with model averaging: exit ${rc}, expected 3:\n${err}")
endif()
message(STATUS "mpi cli: gradients summed in bf16 on both reductions, refused with model averaging")
