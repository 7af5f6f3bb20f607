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

/// Checks, before any work is done, that the file `path` can be written: its directory exists and
/// takes new files (or `path` is a device or pipe that is written in place).
pub fn check_output_dir(path: &Path) -> Result<()> {
    if existing_special(path) {
        return Ok(());
    }
    let dir = parent_dir(path);
    if !dir.is_dir() {
        bail!("cannot write {}: directory {} does not exist", path.display(), dir.display());
    }
    tempfile::tempfile_in(dir).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Checks, before any work is done, that every output (`-` standing for standard output aside) can
/// be written, that none is one of the `inputs`, and that no two are one file.
pub fn check_outputs(inputs: &[&Path], outputs: &[&Path]) -> Result<()> {
    let outputs: Vec<&Path> = outputs.iter().copied().filter(|p| *p != Path::new("-")).collect();
    for (i, out) in outputs.iter().enumerate() {
        check_output_dir(out)?;
        if let Some(input) = inputs.iter().find(|input| same_file(input, out)) {
            bail!("cannot write {}: it is the input {}", out.display(), input.display());
        }
        if let Some(other) = outputs[..i].iter().find(|other| same_file(other, out)) {
            bail!("{} and {} are one file: give each output a file of its own", other.display(), out.display());
        }
    }
    Ok(())
}

/// Whether `a` and `b` name one file: the same file when both exist, else the same path once their
/// directories are resolved.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        use std::os::unix::fs::MetadataExt;
        return (x.dev(), x.ino()) == (y.dev(), y.ino());
    }
    let resolved = |p: &Path| {
        let dir = std::fs::canonicalize(parent_dir(p)).unwrap_or_else(|_| parent_dir(p).to_path_buf());
        p.file_name().map(|n| dir.join(n))
    };
    resolved(a).is_some() && resolved(a) == resolved(b)
}

/// Whether `path` exists and is not a regular file (a device such as `/dev/null`, a pipe): such a
/// file is written in place, never replaced.
fn existing_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes `data` to the file `path` whole: to a temporary file beside it, then renamed over it (the
/// file a symbolic link names, when `path` is one). A device or pipe is written in place instead.
/// A new file gets the usual mode of new files (0666 less the umask).
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    if existing_special(path) {
        let cannot = || format!("cannot write {}", path.display());
        let mut file = std::fs::OpenOptions::new().write(true).open(path).with_context(cannot)?;
        return file.write_all(data).and_then(|()| file.flush()).with_context(cannot);
    }
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(target) => {
                resolved = target;
                resolved.as_path()
            }
            Err(_) => path,
        },
        _ => path,
    };
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
