//! The wire forms of a profile's scalars: 64-bit integers that stay exact in any JSON reader, and
//! the endpoints of paths.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// An unsigned 64-bit integer written as a JSON number up to 2^53 and as a decimal string beyond, so
/// that readers in any language stay exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct U64(pub u64);

const MAX_SAFE: u64 = (1 << 53) - 1;

impl Serialize for U64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0 <= MAX_SAFE {
            s.serialize_u64(self.0)
        } else {
            s.serialize_str(&self.0.to_string())
        }
    }
}

impl<'de> Deserialize<'de> for U64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = U64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an unsigned integer or a decimal string")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<U64, E> {
                Ok(U64(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<U64, E> {
                u64::try_from(v).map(U64).map_err(|_| E::custom("negative value"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<U64, E> {
                v.parse().map(U64).map_err(|_| E::custom(format!("not a decimal u64: {v:?}")))
            }
        }
        d.deserialize_any(V)
    }
}

impl fmt::Display for U64 {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a path starts (`"entry"` or a block id) or ends (`"exit"`, a block id, or `"throw"`: by
/// an exception raised in its last block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    Entry,
    Exit,
    Block(u32),
    Throw,
}

impl Endpoint {
    /// The start of a regenerated path.
    pub fn start(p: crate::regen::PathPoint) -> Endpoint {
        match p {
            crate::regen::PathPoint::Block(b) => Endpoint::Block(b),
            _ => Endpoint::Entry,
        }
    }

    /// The end of a regenerated path.
    pub fn end(p: crate::regen::PathPoint) -> Endpoint {
        match p {
            crate::regen::PathPoint::Boundary => Endpoint::Exit,
            crate::regen::PathPoint::Block(b) => Endpoint::Block(b),
            crate::regen::PathPoint::Throw => Endpoint::Throw,
        }
    }

    /// The point of the DAG this endpoint stands for.
    pub fn point(self) -> crate::regen::PathPoint {
        match self {
            Endpoint::Entry | Endpoint::Exit => crate::regen::PathPoint::Boundary,
            Endpoint::Block(b) => crate::regen::PathPoint::Block(b),
            Endpoint::Throw => crate::regen::PathPoint::Throw,
        }
    }
}

impl Serialize for Endpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Endpoint::Entry => s.serialize_str("entry"),
            Endpoint::Exit => s.serialize_str("exit"),
            Endpoint::Throw => s.serialize_str("throw"),
            Endpoint::Block(b) => s.serialize_u32(*b),
        }
    }
}

impl<'de> Deserialize<'de> for Endpoint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u32),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(b) => Ok(Endpoint::Block(b)),
            Raw::Str(s) if s == "entry" => Ok(Endpoint::Entry),
            Raw::Str(s) if s == "exit" => Ok(Endpoint::Exit),
            Raw::Str(s) if s == "throw" => Ok(Endpoint::Throw),
            Raw::Str(s) => Err(serde::de::Error::custom(format!("bad path endpoint {s:?}"))),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Endpoint::Entry => f.write_str("entry"),
            Endpoint::Exit => f.write_str("exit"),
            Endpoint::Throw => f.write_str("throw"),
            Endpoint::Block(b) => write!(f, "B{b}"),
        }
    }
}
