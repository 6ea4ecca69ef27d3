#!/usr/bin/env bash
# The device check of issue 31 on a GPU machine with a real torch venv (the H200: /opt/torch/.venv, torch 2.11
# cu130, jax 0.11.2 with the CUDA 13 plugin, cupy-cuda13x 14.2, the apt cuDNN 9.14 in ld.so.cache, the CUDA
# toolkit's stub libcuda under /usr/local/cuda).
#
#   scripts/device-import-check.sh VENV CUDADIAG OUTDIR
#
# Writes OUTDIR/import-check.log (and faults.json, import-healthy.txt): the import differential of torch (after
# `import torch`, then after a CUDA convolution), whether the real import imports cuda.bindings (torch 2.11 does
# not) against the modules predicted, the five faults of scripts/import-faults.py with their first
# use, JAX and CuPy against their real processes, `cudadiag import torch` timed, the what-if of an old driver,
# `inspect` of torch's extension module, and the findings doctor and inspect give on the healthy machine.
set -u
V=${1:?usage: $0 VENV CUDADIAG OUTDIR}; B=$(realpath "${2:?}"); OUT=${3:?}
mkdir -p "$OUT"
SP=$(ls -d "$V"/lib/python3*/site-packages)
exec > >(tee "$OUT/import-check.log") 2>&1
echo "== torch healthy: import, then first use"
python3 scripts/import-differential.py --venv $V --cudadiag $B | tail -8
python3 scripts/import-differential.py --venv $V --cudadiag $B --first-use | tail -8
echo "== the PTX JIT compiler and the driver's JIT cache: a CUDA convolution twice on one new cache"
C=$(mktemp -d); for i in 1 2; do CUDA_CACHE_PATH=$C "$V/bin/python" -c "
import torch; x = torch.ones(1, 1, 8, 8, device='cuda'); torch.nn.functional.conv2d(x, torch.ones(1, 1, 3, 3, device='cuda')); torch.cuda.synchronize()
print('run $i: libnvidia-ptxjitcompiler mapped:', 'ptxjitcompiler' in open('/proc/self/maps').read())"; done; du -sh $C; rm -rf $C
echo "== cuda.bindings: imported by torch 2.12 and later only (docs/python-frameworks.md), real vs predicted"
"$V/bin/python" -c "import torch, sys; print('real: torch', torch.__version__, 'cuda.bindings imported:', 'cuda.bindings' in sys.modules)"
$B import torch --venv $V --format json | python3 -c "import json, sys; d = json.load(sys.stdin); print('predicted: cuda.bindings modules', sum('/cuda/bindings/' in l['path'] for l in d['loaded']))"
echo "== torch faults (first use on the H200)"
mkdir -p /tmp/old/nvidia/cudnn/lib; for f in /usr/lib/x86_64-linux-gnu/libcudnn*.so.9; do ln -sf $f /tmp/old/nvidia/cudnn/lib/; done
python3 scripts/import-faults.py --venv $V --cudadiag $B --first-use --older-cudnn /tmp/old --stub /usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so --json > $OUT/faults.json
python3 -c "
import json; rs=json.load(open('$OUT/faults.json'))
for r in rs:
  if 'error' in r: print(r['scenario'], 'ERROR', r['error'][:300]); continue
  print('##', r['scenario'], 'agrees' if r['agrees'] else 'DISAGREES', r['predicted_and_mapped'], len(r['predicted_not_mapped']), len(r['mapped_libraries_not_predicted']))
  print('  real:', [s[0]+': '+s[1][:250] for s in r['real_steps']])
  print('  pred:', r['predicted_import']['kind'], (r['predicted_first_use'] or {}).get('kind'), [(f[0],f[1],f[2][:160]) for f in r['predicted_findings']])
  for p in r['predicted_not_mapped'][:5]: print('  predicted only', p)
  for p in r['mapped_libraries_not_predicted'][:5]: print('  mapped only', p)
  for p in r['jit_cache_dependent']: print('  as the JIT cache decides', p)
"
echo "== jax (jax 0.11.2 + cuda13 plugin)"
python3 scripts/import-differential-jax-tf.py jax --venv $V --cudadiag $B | tail -8
python3 scripts/import-differential-jax-tf.py jax --venv $V --cudadiag $B --gpu-work | tail -8
echo "== cupy (cupy-cuda13x 14.2)"
python3 scripts/import-differential-cupy-ort.py cupy --venv $V --cudadiag $B | tail -8
python3 scripts/import-differential-cupy-ort.py cupy --venv $V --cudadiag $B --first-use --gpu | tail -8
echo "== import torch cupy / jax"; $B import torch cupy --venv $V | grep -E "^import|first GPU use|^(error|warning)" | cut -c1-250; $B import jax --venv $V | grep -E "^import|first GPU use|^(error|warning)" | cut -c1-250
echo "== healthy: cudadiag import torch"; $B import torch --venv $V > $OUT/import-healthy.txt; echo "exit $?"; head -8 $OUT/import-healthy.txt; grep -E "^(error|warning)" $OUT/import-healthy.txt
echo "== time"; python3 - "$B" "$V" <<'P'
import subprocess, sys, time
b, v = sys.argv[1], sys.argv[2]
t = []
for i in range(15):
    s = time.perf_counter(); subprocess.run([b, 'import', 'torch', '--venv', v], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); t.append(time.perf_counter() - s)
t.sort(); print('cudadiag import torch: best %.1f ms, median %.1f ms of 15' % (t[0]*1e3, t[7]*1e3))
P
echo "== what-if 535"; $B import torch --venv $V --gpu 9.0 --driver 535.104.05 | grep -E "first GPU|^error" | cut -c1-300
echo "== inspect _C.so (libnvrtc shadow?)"; $B inspect $SP/torch/_C*.so | grep -E "^(error|warning|note)|will" | cut -c1-250
echo "== doctor (which environment, which framework)"; $B doctor --verbose 2>&1 | grep -vE "^\s*$" | head -60 | cut -c1-300
for m in "torch jax" "jax" "cupy" "torch cupy jax" "jax torch"; do echo "-- import $m"; $B import $m --venv $V 2>&1 | grep -E "^import|first GPU use|^(error|warning)" | cut -c1-300; done
echo "== doctor / inspect slugs"; $B doctor --format json > /tmp/d.json; python3 -c "
import json; d=json.load(open('/tmp/d.json')); print(sorted({(f['slug'],f['severity']) for f in d['findings']}))"
$B inspect $SP/torch/lib/libtorch_cuda.so --format json > /tmp/i.json; python3 -c "
import json; d=json.load(open('/tmp/i.json')); print(sorted({(f['slug'],f['severity']) for f in d['findings']}))"
