#!/bin/bash
# On a machine with a GPU, after `make lib tests tools` and `make -C bench all`
# (where this tree sits; the tests have its paths built in): what only a GPU
# shows, against the machine's own CUDA runtime and PyTorch.
#   1. the library's tests against the real runtime (GPUPOOL_TEST_CUDART=real;
#      `make check` runs this suite too where nvidia-smi lists a GPU)
#   2. the Python tests with this machine's python3, numpy and PyTorch
#      (test_cuda.py holds the GPU-only ones), one file at a time, each
#      under a timeout
#   3. bench/lib_bench against the real runtime: the device pool on every
#      trace, then host-to-device copies from a gpupool chunk, from
#      cudaHostAlloc memory and from pageable malloc memory
#   4. PyTorch under the interposer (gpupoolctl run, scripts/gpu-interpose.py):
#      torch.empty(pin_memory=True), pin_memory() and DataLoader(pin_memory=
#      True) served by the pool, is_pinned(), the copies right, a CUDA graph
#      of a non_blocking copy from an interposed tensor; host-to-device
#      GB/s with the interposer over without; the first pin_memory() of 1,
#      8 and 32 GiB, seconds per GiB, with and without
# Environment: GPUPOOL_CUDART (default: /usr/local/cuda/lib64/libcudart.so.13,
# else libcudart.so.13 from the loader's path), PYTHON (default python3).
# Logs and counts go to $RESULTS_DIR (default build/results); the exit status
# is non-zero when a test failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
results=${RESULTS_DIR:-$O/results}
mkdir -p "$results"
export RESULTS_DIR=$results
py=${PYTHON:-python3}
if [ -z "${GPUPOOL_CUDART:-}" ]; then
	GPUPOOL_CUDART=libcudart.so.13
	[ -e /usr/local/cuda/lib64/libcudart.so.13 ] &&
		GPUPOOL_CUDART=/usr/local/cuda/lib64/libcudart.so.13
fi
export GPUPOOL_CUDART GPUPOOL_BACKEND=${GPUPOOL_BACKEND:-user}
status=0

if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "gpu-check: nvidia-smi lists no GPU here" >&2
	exit 2
fi
nvidia-smi -L
nvidia-smi --query-gpu=driver_version --format=csv,noheader | sed 's/^/driver /'
"$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1

echo "== the library's tests, real runtime ($GPUPOOL_CUDART)"
GPUPOOL_TEST_CUDART=real "$top/scripts/run-tests.sh" lib-real-gpu "$O/tests/lib" 120 ||
	status=1

echo "== Python tests ($py)"
for f in test_cuda.py test_torch.py test_pool.py test_share.py test_read.py \
	 test_loader.py test_npy.py; do
	log=$results/py-${f%.py}.log
	GPUPOOL_PY_TESTS=$f GPUPOOL_LIBRARY="$O/userlib/libgpupool.so.1" \
		GPUPOOL_CTL="$O/tools/gpupoolctl" PYTHONUNBUFFERED=1 \
		timeout -k 5 180 "$py" "$top/python/tests/run_tests.py" > "$log" 2>&1
	rc=$?
	echo "$f: $(grep '^# Totals' "$log" | tail -n 1)"
	if [ "$rc" -ne 0 ]; then
		echo "$f: exit status $rc (124: timed out); log: $log"
		status=1
		sed -n '/^=====/,$p' "$log" | head -n 60
	fi
done

echo "== lib_bench, real runtime"
# The generated traces where `make -C bench bfc` made them.
LIB_BENCH_DEVICE_ONLY=1 timeout -k 5 300 "$O/bench/lib_bench" \
	"$top"/bench/data/*.csv $(ls "$O"/bench/gen_*.csv 2>/dev/null) || status=1

# The module's pool where it is loaded, else libgpupool's own.
backend=user
[ -w /dev/gpupool ] && backend=kernel
echo "== PyTorch under the interposer (gpupoolctl run, $backend backend)"
# The same command under the interposer: "${ip[@]}" COMMAND...
ip=("$O/tools/gpupoolctl" run --backend "$backend"
    --stats "$results/interpose-stats.txt" --)
pyip=("$py" "$top/scripts/gpu-interpose.py")
rm -f "$results/interpose-stats.txt"
timeout -k 5 300 "${ip[@]}" "${pyip[@]}" check || status=1
without=$(timeout -k 5 300 "${pyip[@]}" bandwidth | sed -n 's/^h2d GB\/s: //p')
with=$(timeout -k 5 300 "${ip[@]}" "${pyip[@]}" bandwidth | sed -n 's/^h2d GB\/s: //p')
echo "h2d GB/s from a 1 GiB pinned tensor: $with with the interposer, $without without" \
	"($(awk -v a="$with" -v b="$without" 'BEGIN { if (b > 0) printf "%.3fx", a / b; else print "-" }'))"
for gib in 1 8 32; do
	echo "without: $(timeout -k 5 600 "${pyip[@]}" first-pin $gib)"
	echo "with:    $(timeout -k 5 600 "${ip[@]}" "${pyip[@]}" first-pin $gib)"
done
sed 's/^/  /' "$results/interpose-stats.txt"
exit $status
