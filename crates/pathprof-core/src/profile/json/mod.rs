//! The JSON form of a profile (docs/profile-format.md, version 4).
//!
//! The typed model is written through borrowed views that lay out the documented fields, and read
//! through plain records of those fields, which are then checked: a profile whose fields contradict
//! one another (a `pep` profile without its `sampling` object, a skipped function with paths) is
//! refused rather than read into a state the model does not admit.

mod function;
mod layout;
mod records;
#[cfg(test)]
mod tests;

use super::Profile;
use layout::Layered;
use serde::{Deserialize, Serialize};

/// Value of the `format` field.
pub const FORMAT: &str = "pathprof-profile";
/// Value of the `version` field written.
pub const VERSION: u32 = 4;
/// The versions read: version 3 lacks exception ends and landings, version 2 mode `events` and its
/// fields too, version 1 mode `ppp` too, and all read as they are.
const READ_VERSIONS: [u32; 4] = [1, 2, 3, 4];

/// Why a profile file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a pathprof profile")]
    Json(#[from] serde_json::Error),
    #[error("not a pathprof profile (format is {0:?})")]
    Format(String),
    #[error("not a pathprof profile (not a JSON object)")]
    NotObject,
    #[error("profile version {0} is not supported (this pathprof reads versions {first} to {last})", first = READ_VERSIONS[0], last = READ_VERSIONS[READ_VERSIONS.len() - 1])]
    Version(u32),
    #[error("not a pathprof profile (nested more than {MAX_DEPTH} levels deep)")]
    TooDeep,
}

/// Deepest nesting of arrays and objects read: a k-IPF of k = 64 nests about 135 levels deep, and
/// JSON's own recursion limit of 128 would refuse it.
const MAX_DEPTH: usize = 256;

/// The deepest nesting of arrays and objects in `text`, strings skipped.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

impl Profile {
    /// Parses and checks a profile.
    pub fn from_json(text: &str) -> Result<Profile, ReadError> {
        if nesting_depth(text) > MAX_DEPTH {
            return Err(ReadError::TooDeep);
        }
        if !text.trim_start().starts_with('{') {
            return Err(ReadError::NotObject);
        }
        // The format and version first, the rest skipped without being kept; then the profile
        // itself, straight from the text (a tree of JSON values would take ten times its size).
        let header = Self::parse::<Header>(text).or_else(|e| match e.classify() {
            serde_json::error::Category::Data => Ok(Header::default()),
            _ => Err(e),
        })?;
        match header.format.as_ref().and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            other => return Err(ReadError::Format(other.unwrap_or("missing").to_string())),
        }
        match header.version.as_ref().and_then(|v| v.as_u64()) {
            Some(v) if READ_VERSIONS.iter().any(|&r| u64::from(r) == v) => {}
            other => return Err(ReadError::Version(other.unwrap_or(0) as u32)),
        }
        Ok(Self::parse::<Profile>(text)?)
    }

    /// `text` as a `T`, nested as deep as it is (its depth is checked beforehand).
    fn parse<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let value = T::deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }

    /// The profile as JSON: the top level, every function and every field of a function on lines of
    /// their own, and what a field holds (blocks, paths, edges, forests) on its line, so that the
    /// file reads by function and stays as small as compact JSON.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Layered::new(3));
        self.serialize(&mut ser).expect("profiles always serialize");
        out.push(b'\n');
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }
}

/// The fields of a profile that say what it is; any others are skipped.
#[derive(Default, Deserialize)]
struct Header {
    #[serde(default)]
    format: Option<serde_json::Value>,
    #[serde(default)]
    version: Option<serde_json::Value>,
}
