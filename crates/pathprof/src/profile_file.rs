//! Reading and writing profile files: never a half-written file.

use anyhow::{Context, Result};
use pathprof_core::profile::Profile;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;

/// Writes `data` to a temporary file beside `path`, then renames it over `path`.
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("cannot write {}", path.display()))?;
    tmp.write_all(data).with_context(|| format!("cannot write {}", path.display()))?;
    tmp.as_file().sync_all().ok();
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Reads and checks a profile.
pub fn read(path: &Path) -> Result<Profile> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Profile::from_json(&text).with_context(|| format!("cannot read {}", path.display()))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
