//! Reading modules and profiles, and writing files: never a half-written file.

use anyhow::{anyhow, bail, Context, Result};
use pathprof_core::profile::Profile;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;

/// The directory a file `path` is written into.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Checks, before any work is done, that the file `path` can be created: its directory exists.
pub fn check_output_dir(path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    if !dir.is_dir() {
        bail!("cannot write {}: directory {} does not exist", path.display(), dir.display());
    }
    Ok(())
}

/// Writes `data` to a temporary file beside `path`, then renames it over `path`. The file gets the
/// usual mode of new files (0666 less the umask).
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).with_context(|| format!("cannot write {}", path.display()))?;
    tmp.write_all(data).with_context(|| format!("cannot write {}", path.display()))?;
    tmp.as_file().sync_all().ok();
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Reads and checks a profile.
pub fn read_profile(path: &Path) -> Result<Profile> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Profile::from_json(&text).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads a module in the binary format, or in the text format (`.wat`).
pub fn read_module(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.starts_with(b"\0asm") || !bytes.iter().take(64).all(|b| b.is_ascii()) {
        return Ok(bytes);
    }
    wat::parse_bytes(&bytes).map(|b| b.into_owned()).map_err(|e| {
        anyhow!(
            "{}: not a WebAssembly module (text format error: {})",
            path.display(),
            e.to_string().lines().next().unwrap_or("")
        )
    })
}

/// The SHA-256 digest of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
