#!/usr/bin/env python3
"""Differential: the libcuda.so.1 and libnvidia-ml.so.1 that glibc's dlopen really loads (from a program with
no RPATH or RUNPATH, as the CUDA runtime's own dlopen is) against the first candidate `cudadiag doctor` names,
under each LD_LIBRARY_PATH given (the empty string: as inherited). Needs a machine with the NVIDIA driver.

Usage: CUDADIAG=target/release/cudadiag scripts/libcuda-differential.py [LD_LIBRARY_PATH]...

Prints one line per case and library, and exits 1 if any differs.
"""
import json, os, shutil, subprocess, sys

# Run in a fresh python3 (LD_LIBRARY_PATH is read when a process starts): dlopen the library, then print the
# real path of the file mapped for it, or (none).
DLOPEN = r'''
import ctypes, os, sys
name = sys.argv[1]
try:
    ctypes.CDLL(name)
except OSError:
    print("(none)")
    sys.exit()
stem = name.split(".so")[0] + ".so"
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if os.path.basename(path).startswith(stem):
        print(os.path.realpath(path))
        break
'''

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    sys.exit(__doc__.split("\n\n")[1])
binary = os.environ.get("CUDADIAG") or "target/release/cudadiag"
if not shutil.which(binary):
    sys.exit(f"libcuda-differential: {binary}: not found")
status = 0
for llp in sys.argv[1:] or [""]:
    env = dict(os.environ)
    if llp:
        env["LD_LIBRARY_PATH"] = llp
    for soname, key in (("libcuda.so.1", "libcuda"), ("libnvidia-ml.so.1", "nvml")):
        real = subprocess.run(["python3", "-c", DLOPEN, soname], env=env, stdout=subprocess.PIPE,
                              text=True).stdout.strip()
        doctor = subprocess.run([binary, "doctor", "--format", "json", "--fail-on", "never"], env=env,
                                stdout=subprocess.PIPE, text=True).stdout
        try:
            c = json.loads(doctor)["host"]["facts"][key]
            ours = c[0]["real_path"] if c else "(none)"
        except (ValueError, KeyError, IndexError, TypeError) as e:
            ours = f"(unreadable doctor report: {e})"  # printed as a difference
        verdict = "same" if real == ours else "DIFFERENT"
        if real != ours:
            status = 1
        print(f"{verdict}  LD_LIBRARY_PATH={llp or '(inherited)'}  {soname}: glibc {real}, cudadiag {ours}", flush=True)
sys.exit(status)
