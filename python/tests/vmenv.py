"""Whether a test runs in the test VM: vm/guest-run.sh sets GPUPOOL_VM=1.
There everything runs under TCG, tens of times slower than on the host (an
import of torch takes about 25 s), and there is never a GPU."""
import os

IN_VM = os.environ.get("GPUPOOL_VM") == "1"
