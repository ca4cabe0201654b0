//! Hashes every file of a folder on a workqueue, the way a storage service checksums blocks:
//! one work item per file, a digest line per file, then the workqueue's statistics.
//!
//! `cargo run -p podq --example hash_files -- [FOLDER]` (default: the current folder)

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::Hasher;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use podq::{AffinityScope, Workqueue};

/// A 64-bit digest of a file's bytes (SipHash; not a cryptographic checksum).
fn digest(path: &Path) -> io::Result<(u64, u64)> {
    let mut file = fs::File::open(path)?;
    let mut hasher = DefaultHasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok((hasher.finish(), len));
        }
        hasher.write(&buf[..n]);
        len += n as u64;
    }
}

/// Every regular file under `dir`, depth first.
fn files(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            files(&entry.path(), out)?;
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let root = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    match run(&root) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("hash_files: {}: {err}", root.display());
            std::process::ExitCode::from(1)
        }
    }
}

/// Hashes every file under `root` on a workqueue and prints the digests and the stats.
fn run(root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut paths = Vec::new();
    files(root, &mut paths)?;
    paths.sort();

    let wq = Workqueue::builder("hash")
        .scope(AffinityScope::CacheShard)
        .max_active(64)
        .build()?;
    let results = Arc::new(Mutex::new(Vec::with_capacity(paths.len())));
    for path in paths {
        let results = Arc::clone(&results);
        wq.queue(move || {
            let line = match digest(&path) {
                Ok((hash, len)) => format!("{hash:016x}  {len:>10}  {}", path.display()),
                Err(e) => format!("{:16}  {:>10}  {}: {e}", "error", "-", path.display()),
            };
            results.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        });
    }
    wq.flush();
    let mut lines = std::mem::take(&mut *results.lock().unwrap_or_else(|p| p.into_inner()));
    lines.sort_by(|a, b| a[30..].cmp(&b[30..]));
    for line in &lines {
        println!("{line}");
    }
    let stats = wq.stats();
    eprintln!(
        "{} files on '{}' ({} scope, {} pools): {} completed, {} panicked",
        lines.len(),
        stats.name,
        stats.scope,
        stats.pools.len(),
        stats.completed,
        stats.panicked
    );
    for pool in &stats.pools {
        eprintln!(
            "  pod {:>3} CPUs {:<10} workers {:>3} (created {:>3})  executed {:>6}  lock contended {}/{}",
            pool.pod,
            pool.cpus.to_string(),
            pool.workers,
            pool.workers_created,
            pool.executed,
            pool.lock_contended,
            pool.lock_acquisitions
        );
    }
    Ok(())
}
