//! The Prometheus text exposition format (version 0.0.4), for `metrics`:
//! one `# HELP` and `# TYPE` line per family, then its samples. Names carry
//! the `agentcron_` prefix and base units (seconds). The textfile is
//! replaced atomically, so node_exporter never reads half of it.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};

/// A family of gauges being written.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
    samples: Vec<serde_json::Value>,
}

impl Exposition {
    /// One gauge without labels.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, help, &[(None, value)]);
    }

    /// A gauge with one label, one sample per label value.
    pub fn labelled(&mut self, name: &str, help: &str, label: &str, samples: &[(&str, f64)]) {
        self.family(name, help, &with_label(label, samples));
    }

    /// A counter with one label (`name` ends in `_total`): it only grows,
    /// so Prometheus's rate() works on it.
    pub fn counter(&mut self, name: &str, help: &str, label: &str, samples: &[(&str, f64)]) {
        self.typed_family(name, help, "counter", &with_label(label, samples));
    }

    fn family(&mut self, name: &str, help: &str, samples: &[(Option<(&str, &str)>, f64)]) {
        self.typed_family(name, help, "gauge", samples);
    }

    fn typed_family(
        &mut self,
        name: &str,
        help: &str,
        kind: &str,
        samples: &[(Option<(&str, &str)>, f64)],
    ) {
        let name = format!("agentcron_{name}");
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
        for (label, value) in samples {
            let labels = label
                .map(|(k, v)| format!("{{{k}=\"{}\"}}", escape_label(v)))
                .unwrap_or_default();
            let _ = writeln!(self.text, "{name}{labels} {}", number(*value));
            let labels: serde_json::Map<String, serde_json::Value> = label
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
                .collect();
            self.samples
                .push(serde_json::json!({"name": name, "labels": labels, "value": value}));
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The samples as JSON (`--json`): `{"metrics": [{name, labels, value}]}`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({ "metrics": self.samples })
    }
}

/// Samples of one label, each with its value of it.
fn with_label<'a>(
    label: &'a str,
    samples: &[(&'a str, f64)],
) -> Vec<(Option<(&'a str, &'a str)>, f64)> {
    samples
        .iter()
        .map(|(v, n)| (Some((label, *v)), *n))
        .collect()
}

/// Whole numbers without a fraction, others as Rust prints them, without
/// float noise (`limits::decimal`: usage summed from 0.1s is 0.3); both
/// are valid Go `ParseFloat` input, which is what Prometheus reads.
fn number(value: f64) -> String {
    let value = crate::limits::decimal(value);
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(text: &str) -> String {
    escape_help(text).replace('"', "\\\"")
}

/// Writes `text` to `path` so that a reader sees the old file or the new
/// one, never a part: a temporary file in the same folder (its name does
/// not end in `.prom`, so the textfile collector skips it), synced, mode
/// 0644, renamed over the target.
pub fn write_textfile(path: &Path, text: &str) -> Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let temp = folder.join(format!(
        ".{}.tmp.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&temp)?;
        // The umask may have taken bits away: the collector must read it.
        file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(anyhow::Error::new(e).context(format!("writing {}", path.display())));
    }
    Ok(())
}
