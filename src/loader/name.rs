//! What a library's file name says of its version. A leaf: the walk (`resolve`), the search (`search`) and
//! the copies on disk (`copies`) all read it.

/// Reads the version at the end of a file name: `libcudart.so.12.4.127` → `12.4.127`.
pub fn version_from_name(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let (_, tail) = name.split_once(".so.")?;
    (!tail.is_empty()
        && tail
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then(|| tail.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_names() {
        assert_eq!(
            version_from_name("/x/libcudart.so.12.4.127").as_deref(),
            Some("12.4.127")
        );
        assert_eq!(version_from_name("/x/libcuda.so").as_deref(), None);
        assert_eq!(version_from_name("libfoo.so.1.x").as_deref(), None);
    }
}
