//! Redaction of typed facts as they are serialised: only the strings the facts hold as data are rewritten.
//!
//! Redacting the serialised JSON tree string by string cannot tell a path from an enum variant or a struct's
//! field name: a host called `open`, `host` or `version` rewrote `"state": "open"` and `"host": {…}` and the
//! bundle no longer read back (issue 33). This adapter sits between the facts' `Serialize` impls and the
//! serialiser that builds the tree, and sees what serde itself distinguishes:
//!
//! - `serialize_str` (and `collect_str`): a string the facts hold as data: a path, a name, a value, and the
//!   keys of maps (variable names, paths): rewritten by the [`Redactor`](super::redact::Redactor);
//! - struct field names and unit variants (`rename_all` enum values): structure, passed through unchanged;
//! - the tag of an internally tagged enum (`#[serde(tag = "state")]`): serde writes the variant's name as an
//!   ordinary string field, so the fields named in [`TAGS`] are passed through too (a test checks that every
//!   `tag = "…"` of the facts is listed).
//!
//! Numbers, booleans and nulls are never names and pass through.

use serde::ser::{
    Serialize, SerializeMap, SerializeSeq, SerializeStruct, SerializeStructVariant, SerializeTuple,
    SerializeTupleStruct, SerializeTupleVariant, Serializer,
};
use std::cell::RefCell;

/// The field names that internally tagged enums of the facts use for their tag: their string values are
/// variant names, not data.
pub const TAGS: &[&str] = &["kind", "state"];

/// Anything that rewrites one string of data.
pub trait Rewrite {
    /// `s` with what is private in it replaced.
    fn rewrite(&mut self, s: &str) -> String;
}

/// `value`, serialised with every string of data passed through `r` ([`Rewrite`]).
pub struct Scrub<'a, T: ?Sized, R> {
    value: &'a T,
    r: &'a RefCell<R>,
    keep: bool,
}

impl<'a, T: ?Sized, R> Scrub<'a, T, R> {
    /// Wraps `value`; serialise the wrapper.
    pub fn new(value: &'a T, r: &'a RefCell<R>) -> Self {
        Scrub {
            value,
            r,
            keep: false,
        }
    }
}

impl<T: Serialize + ?Sized, R: Rewrite> Serialize for Scrub<'_, T, R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(Adapter {
            inner: s,
            r: self.r,
            keep: self.keep,
        })
    }
}

struct Adapter<'a, S, R> {
    inner: S,
    r: &'a RefCell<R>,
    /// A tag's value: a variant name, passed through.
    keep: bool,
}

/// One wrapper for every compound serialiser: each element, key and value goes through the adapter again.
struct Compound<'a, C, R> {
    inner: C,
    r: &'a RefCell<R>,
}

impl<'a, C, R> Compound<'a, C, R> {
    fn wrap<'v, T: ?Sized>(&self, value: &'v T) -> Scrub<'v, T, R>
    where
        'a: 'v,
    {
        Scrub {
            value,
            r: self.r,
            keep: false,
        }
    }
}

macro_rules! pass {
    ($($name:ident($t:ty)),*) => {$(
        fn $name(self, v: $t) -> Result<S::Ok, S::Error> {
            self.inner.$name(v)
        }
    )*};
}

impl<'a, S: Serializer, R: Rewrite> Serializer for Adapter<'a, S, R> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Compound<'a, S::SerializeSeq, R>;
    type SerializeTuple = Compound<'a, S::SerializeTuple, R>;
    type SerializeTupleStruct = Compound<'a, S::SerializeTupleStruct, R>;
    type SerializeTupleVariant = Compound<'a, S::SerializeTupleVariant, R>;
    type SerializeMap = Compound<'a, S::SerializeMap, R>;
    type SerializeStruct = Compound<'a, S::SerializeStruct, R>;
    type SerializeStructVariant = Compound<'a, S::SerializeStructVariant, R>;

    pass!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str)
    );

    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        if self.keep {
            return self.inner.serialize_str(v);
        }
        let redacted = self.r.borrow_mut().rewrite(v);
        self.inner.serialize_str(&redacted)
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_none()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        self.inner.serialize_some(&Scrub::new(v, self.r))
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        i: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit_variant(name, i, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_newtype_struct(name, &Scrub::new(v, self.r))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        i: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.inner
            .serialize_newtype_variant(name, i, variant, &Scrub::new(v, self.r))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let inner = self.inner.serialize_seq(len)?;
        Ok(Compound { inner, r: self.r })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let inner = self.inner.serialize_tuple(len)?;
        Ok(Compound { inner, r: self.r })
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        let inner = self.inner.serialize_tuple_struct(name, len)?;
        Ok(Compound { inner, r: self.r })
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        let inner = self.inner.serialize_tuple_variant(name, i, variant, len)?;
        Ok(Compound { inner, r: self.r })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let inner = self.inner.serialize_map(len)?;
        Ok(Compound { inner, r: self.r })
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
        let inner = self.inner.serialize_struct(name, len)?;
        Ok(Compound { inner, r: self.r })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        let inner = self.inner.serialize_struct_variant(name, i, variant, len)?;
        Ok(Compound { inner, r: self.r })
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

macro_rules! elements {
    ($($trait:ident, $method:ident);*) => {$(
        impl<C: $trait, R: Rewrite> $trait for Compound<'_, C, R> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
                let w = self.wrap(v);
                self.inner.$method(&w)
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.inner.end()
            }
        }
    )*};
}

elements!(
    SerializeSeq, serialize_element;
    SerializeTuple, serialize_element;
    SerializeTupleStruct, serialize_field;
    SerializeTupleVariant, serialize_field
);

impl<C: SerializeMap, R: Rewrite> SerializeMap for Compound<'_, C, R> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), C::Error> {
        let w = self.wrap(k);
        self.inner.serialize_key(&w)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
        let w = self.wrap(v);
        self.inner.serialize_value(&w)
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl<C: $trait, R: Rewrite> $trait for Compound<'_, C, R> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), C::Error> {
                let mut w = self.wrap(v);
                w.keep = TAGS.contains(&key);
                self.inner.serialize_field(key, &w)
            }
            fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
                self.inner.skip_field(key)
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.inner.end()
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

/// `value` as a JSON tree with every string of data rewritten by `r`.
pub fn to_value<T: Serialize + ?Sized, R: Rewrite>(
    value: &T,
    r: &RefCell<R>,
) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(Scrub::new(value, r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    struct Upper;
    impl Rewrite for Upper {
        fn rewrite(&mut self, s: &str) -> String {
            s.to_uppercase()
        }
    }

    #[derive(serde::Serialize, Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "kebab-case")]
    enum Mode {
        Open,
        Closed,
    }

    #[derive(serde::Serialize, Deserialize, Debug, PartialEq)]
    #[serde(tag = "state", rename_all = "kebab-case")]
    enum Tagged {
        Open { path: String },
        Closed,
    }

    #[derive(serde::Serialize, Deserialize, Debug, PartialEq)]
    struct Facts {
        open: String,
        mode: Mode,
        tagged: Vec<Tagged>,
        map: std::collections::BTreeMap<String, Option<String>>,
        pair: (String, u32),
    }

    #[test]
    fn data_is_rewritten_and_structure_is_not() {
        let f = Facts {
            open: "open".into(),
            mode: Mode::Open,
            tagged: vec![Tagged::Open { path: "open".into() }, Tagged::Closed],
            map: [("open".to_string(), Some("open".to_string()))].into(),
            pair: ("open".into(), 1),
        };
        let v = to_value(&f, &RefCell::new(Upper)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"open": "OPEN", "mode": "open",
                "tagged": [{"state": "open", "path": "OPEN"}, {"state": "closed"}],
                "map": {"OPEN": "OPEN"}, "pair": ["OPEN", 1]})
        );
        let back: Facts = serde_json::from_value(v).unwrap();
        assert_eq!(back.mode, Mode::Open);
    }

    /// Every internally tagged enum of the facts names its tag in [`TAGS`]: its value is a variant name.
    #[test]
    fn every_tag_of_the_facts_is_listed() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut seen = 0;
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("bundle/scrub.rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for part in text.split("tag = \"").skip(1) {
                        let tag = part.split('"').next().unwrap();
                        seen += 1;
                        assert!(TAGS.contains(&tag), "{}: tag {tag:?} is not in TAGS", p.display());
                    }
                }
            }
        }
        assert!(
            seen >= 4,
            "found {seen} tagged enums: the scan is looking in the wrong place"
        );
    }
}
