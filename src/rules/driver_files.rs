//! `driver-library-damaged`: a driver library file that is empty or cut short (`host::libfile`).
//!
//! glibc's loader reads the ELF header and program headers with `pread` and maps each `PT_LOAD` segment
//! (`elf/dl-load.c`: "file too short", "ELF load command past end of file"): an empty file or one whose headers
//! or segments end past its end cannot be loaded, and what users see is a driver that seems absent
//! (`libcuda.so.1: cannot open shared object file`, error 35, NVML failing). Section headers lie at the end of
//! the file, so a copy cut short loses them first; ld.so does not need them, but such a file is not the one the
//! driver installed and its loadable part is not to be trusted either. Sources: `docs/driver-libraries.md`.

use crate::facts::HostFacts;
use crate::findings::{Code, Finding};

/// One finding per damaged file, naming which candidate for `libcuda.so.1` / `libnvidia-ml.so.1` it is when it
/// is one.
pub fn damaged(h: &HostFacts) -> Vec<Finding> {
    h.driver_files
        .iter()
        .filter_map(|file| {
            let damage = file.damage()?;
            let role = h
                .libcuda
                .iter()
                .chain(h.nvml.iter())
                .find(|c| c.real_path == file.path)
                .map(|c| format!(" (the loader's candidate for {})", c.path));
            let mut f = Finding::new(
                Code::DriverLibraryDamaged,
                format!(
                    "driver library {} {damage}: the loader refuses it, and CUDA reports the driver as missing",
                    file.path
                ),
                "Reinstall the driver's user-space libraries (`sudo apt-get install --reinstall \
                 libnvidia-compute-<branch>`, `sudo dnf reinstall nvidia-driver-cuda-libs`, or rerun the .run \
                 installer), freeing disk space first if it ran out. In a container, fix the host's files or \
                 rebuild the image.",
            )
            .because(format!("{}{}", file.describe(), role.unwrap_or_default()));
            if let Some(d) = &h.driver {
                f = f.because(format!("{} shows kernel module {}", d.source, d.version));
            }
            Some(f)
        })
        .collect()
}
