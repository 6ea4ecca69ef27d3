//! A captured environment.

use std::collections::BTreeMap;

/// Environment variables as the diagnosed program would see them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// The current process's environment (variables that are not valid UTF-8 are skipped).
    pub fn from_process() -> Env {
        Env {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// An empty environment.
    pub fn empty() -> Env {
        Env::default()
    }

    /// Builds the environment for a run: the process's (or none with `clear`), then `KEY=VALUE` overrides in
    /// order. A `KEY` without `=` removes the variable.
    pub fn build(clear: bool, overrides: &[String]) -> Env {
        let mut env = if clear { Env::empty() } else { Env::from_process() };
        for o in overrides {
            match o.split_once('=') {
                Some((k, v)) => env.set(k, v),
                None => env.remove(o),
            }
        }
        env
    }

    /// The value of `key`, if set (set-but-empty is `Some("")`, which matters: `CUDA_VISIBLE_DEVICES=""` hides
    /// every GPU).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// Sets `key`.
    pub fn set(&mut self, key: &str, value: &str) {
        self.vars.insert(key.to_string(), value.to_string());
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &str) {
        self.vars.remove(key);
    }

    /// Every variable, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_in_order() {
        let env = Env::build(
            true,
            &["A=1".into(), "B=".into(), "A=2".into(), "C=x".into(), "C".into()],
        );
        assert_eq!(env.get("A"), Some("2"));
        assert_eq!(env.get("B"), Some(""));
        assert_eq!(env.get("C"), None);
    }
}
