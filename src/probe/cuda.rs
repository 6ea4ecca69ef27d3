//! CUDA error names and messages, for libraries that cannot tell us themselves.
//!
//! `cuGetErrorName`/`cuGetErrorString` are asked first; this table answers only when the loaded library has
//! no such function (a fake, a very old driver) or refuses the code. Values and strings: cuda.h and the
//! strings libcuda returns (`cuGetErrorString` of driver 580), which the error rows of `data/compat.toml` cite.

/// `(code, CUresult name, message)`.
const TABLE: &[(i32, &str, &str)] = &[
    (0, "CUDA_SUCCESS", "no error"),
    (1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    (2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    (3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    (4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"),
    (34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"),
    (
        46,
        "CUDA_ERROR_DEVICE_UNAVAILABLE",
        "CUDA-capable device(s) is/are busy or unavailable",
    ),
    (100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    (101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    (200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"),
    (201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    (
        209,
        "CUDA_ERROR_NO_BINARY_FOR_GPU",
        "no kernel image is available for execution on the device",
    ),
    (218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
    (
        221,
        "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
        "PTX JIT compiler library not found",
    ),
    (
        222,
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        "the provided PTX was compiled with an unsupported toolchain.",
    ),
    (
        223,
        "CUDA_ERROR_JIT_COMPILATION_DISABLED",
        "PTX JIT compilation was disabled",
    ),
    (500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    (
        700,
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "an illegal memory access was encountered",
    ),
    (719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
    (800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"),
    (801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
    (802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"),
    (
        803,
        "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        "system has unsupported display driver / cuda driver combination",
    ),
    (
        804,
        "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
        "forward compatibility was attempted on non supported HW",
    ),
    (999, "CUDA_ERROR_UNKNOWN", "unknown error"),
];

/// The driver API name and message of `code`, from cudadiag's table.
pub fn known(code: i32) -> Option<(&'static str, &'static str)> {
    TABLE
        .iter()
        .find(|(c, _, _)| *c == code)
        .map(|(_, n, m)| (*n, *m))
}

/// Name of a signal number, for "killed by signal 11 (SIGSEGV)".
pub fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_codes_are_unique_and_named_like_cuda_h() {
        let mut codes: Vec<i32> = TABLE.iter().map(|t| t.0).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), TABLE.len());
        assert!(TABLE.iter().all(|t| t.1.starts_with("CUDA_")));
        assert_eq!(known(34).map(|k| k.0), Some("CUDA_ERROR_STUB_LIBRARY"));
        assert_eq!(known(35), None, "35 is runtime-only: no CUresult has that value");
        assert_eq!(signal_name(11), Some("SIGSEGV"));
        assert_eq!(signal_name(64), None);
    }
}
