//! A profile as one self-contained HTML page (`report --html`): its summary, the functions by
//! operators executed (a table sorted by any column with a click), the hot paths with the source
//! lines they run, and a flame graph of the paths by cost. Nothing is loaded from elsewhere: styles
//! and script are inline and the flame graph is embedded as a data URL.

use super::source::place;
use super::{block_list, group, group_wide, share};
use crate::export::{flame_graph, folded_paths, Drawing};
use crate::source::{path_steps, SourceFiles};
use crate::view::{function_cost, function_label, hottest, matches, path_cost, path_ops, total_cost, Rank};
use anyhow::Result;
use base64::Engine as _;
use pathprof_core::profile::Profile;
use std::fmt::Write;

/// Most functions listed in the table.
const MAX_FUNCTIONS: usize = 500;

/// `s` with the characters HTML gives a meaning escaped.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; border-bottom: 1px solid #ddd; }
th { cursor: pointer; text-align: left; background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: 0.4em 0; } summary { cursor: pointer; }
pre { background: #fafafa; border: 1px solid #eee; padding: 6px; overflow-x: auto; margin: 4px 0 4px 1.5em; }
.at { color: #777; } .note { color: #777; }
object { width: 100%; border: 1px solid #eee; }
"#;

/// Sorts a table by the clicked column (numbers by value, the rest as text; a second click
/// reverses), and marks the page as rendered: `data-ready`, with `data-errors` for any script error.
const SCRIPT: &str = r#"
window.addEventListener('error', function (e) {
  document.body.dataset.errors = (document.body.dataset.errors || '') + e.message + ';';
});
function sortTable(th) {
  var table = th.closest('table'), body = table.tBodies[0];
  var col = Array.prototype.indexOf.call(th.parentNode.children, th);
  var down = th.dataset.dir !== 'down';
  th.dataset.dir = down ? 'down' : 'up';
  var rows = Array.prototype.slice.call(body.rows);
  rows.sort(function (a, b) {
    var x = a.cells[col].dataset.v || a.cells[col].textContent, y = b.cells[col].dataset.v || b.cells[col].textContent;
    var nx = Number(x), ny = Number(y);
    var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
    return down ? -c : c;
  });
  rows.forEach(function (r) { body.appendChild(r); });
}
document.addEventListener('DOMContentLoaded', function () {
  document.querySelectorAll('th').forEach(function (th) { th.addEventListener('click', function () { sortTable(th); }); });
  document.body.dataset.functions = document.querySelectorAll('#functions tbody tr').length;
  document.body.dataset.paths = document.querySelectorAll('#paths details').length;
  document.body.dataset.ready = '1';
});
"#;

/// The page of profile `p`: its `top` hot paths by `rank` (of `function` only, when given), with
/// source text from `files`.
pub fn page(p: &Profile, top: usize, function: Option<&str>, rank: Rank, files: &mut SourceFiles) -> Result<String> {
    let mut h = String::new();
    let title = format!("pathprof: {} profile of {}", p.mode, p.module.path);
    writeln!(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")?;
    writeln!(h, "<title>{}</title><style>{STYLE}</style><script>{SCRIPT}</script></head><body>", esc(&title))?;
    writeln!(h, "<h1>{}</h1>", esc(&title))?;
    summary(&mut h, p)?;
    let operators = total_cost(p);
    functions(&mut h, p, function, operators)?;
    paths(&mut h, p, top, function, rank, operators, files)?;
    writeln!(h, "<h2>Flame graph</h2>")?;
    let lines = folded_paths(p, function, Rank::Cost);
    match flame_graph(p, &lines, function, Drawing::Paths(Rank::Cost)) {
        Ok(svg) => {
            let data = base64::engine::general_purpose::STANDARD.encode(svg);
            let height = 18 * (lines.iter().map(|l| l.matches(';').count()).max().unwrap_or(1) + 5) + 60;
            writeln!(
                h,
                "<object type=\"image/svg+xml\" height=\"{height}\" data=\"data:image/svg+xml;base64,{data}\">flame graph</object>"
            )?;
        }
        Err(e) => writeln!(h, "<p class=\"note\">{}</p>", esc(&e.to_string()))?,
    }
    writeln!(h, "</body></html>")?;
    Ok(h)
}

fn summary(h: &mut String, p: &Profile) -> Result<()> {
    let instrumented = p.functions.iter().filter(|f| f.is_instrumented()).count();
    writeln!(h, "<p>Exit {}, wall {:.3} s", p.exit_code, p.wall_seconds)?;
    if p.runs > 1 {
        write!(h, " over {} runs", p.runs)?;
    }
    writeln!(
        h,
        ". {instrumented} functions instrumented, {} skipped; {} path executions, {} operators executed.</p>",
        p.functions.len() - instrumented,
        group(p.path_executions.0),
        group_wide(total_cost(p))
    )?;
    if let Some(t) = &p.trap {
        writeln!(h, "<p>Trap: {}</p>", esc(t))?;
    }
    Ok(())
}

fn functions(h: &mut String, p: &Profile, function: Option<&str>, operators: u128) -> Result<()> {
    let mut list: Vec<_> = p
        .functions
        .iter()
        .filter(|f| !f.paths().is_empty() && function.is_none_or(|sel| matches(f, sel)))
        .map(|f| (f, function_cost(f)))
        .collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.index.cmp(&b.0.index)));
    writeln!(h, "<h2>Functions</h2>")?;
    if list.len() > MAX_FUNCTIONS {
        writeln!(h, "<p class=\"note\">The {MAX_FUNCTIONS} of {} functions that executed most.</p>", list.len())?;
    }
    writeln!(h, "<table id=\"functions\"><thead><tr><th>function</th><th>index</th><th>operators</th><th>share</th><th>path executions</th><th>distinct paths</th></tr></thead><tbody>")?;
    for (f, cost) in list.into_iter().take(MAX_FUNCTIONS) {
        let executions: u128 = f.paths().iter().map(|x| u128::from(x.count.0)).sum();
        writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\" data-v=\"{cost}\">{}</td><td class=\"n\">{:.2}%</td><td class=\"n\" data-v=\"{executions}\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&function_label(f)),
            f.index,
            group_wide(cost),
            share(cost, operators),
            group_wide(executions),
            f.paths().len()
        )?;
    }
    writeln!(h, "</tbody></table>")?;
    Ok(())
}

fn paths(
    h: &mut String,
    p: &Profile,
    top: usize,
    function: Option<&str>,
    rank: Rank,
    operators: u128,
    files: &mut SourceFiles,
) -> Result<()> {
    let by = rank.measure();
    writeln!(h, "<h2>Hot paths by {by}</h2><div id=\"paths\">")?;
    let hot = hottest(p, top, function, rank);
    if hot.is_empty() {
        writeln!(h, "<p class=\"note\">No path ran.</p>")?;
    }
    for (n, (f, path)) in hot.iter().enumerate() {
        let cost = path_cost(f, path);
        writeln!(
            h,
            "<details{}><summary>#{} {} path {} ({}→{}): {} runs, {} operators each, {} in all ({:.2}%)</summary>",
            if n < 3 { " open" } else { "" },
            n + 1,
            esc(&function_label(f)),
            path.id,
            path.start,
            path.end,
            group(path.count.0),
            group(path_ops(f, path)),
            group_wide(cost),
            share(cost, operators)
        )?;
        let steps = path_steps(f, path);
        h.push_str("<pre>");
        if steps.is_empty() {
            write!(h, "no source lines: blocks {}", esc(&block_list(&path.blocks).join(" ")))?;
        }
        for step in &steps {
            let at = place(&step.file, step.line);
            match step.line.and_then(|l| files.line(&step.file, l)) {
                Some(text) => writeln!(h, "<span class=\"at\">{}</span>  {}", esc(&at), esc(text.trim_end()))?,
                None => writeln!(h, "<span class=\"at\">{}</span>", esc(&at))?,
            }
        }
        writeln!(h, "</pre></details>")?;
    }
    writeln!(h, "</div>")?;
    Ok(())
}
