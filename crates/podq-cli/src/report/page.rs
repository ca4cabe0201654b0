//! `--page`: the report's summary written into a Markdown page between two marker lines, the
//! rest of the page kept as it is.

use std::path::Path;

use serde_json::Value;

use super::markdown::page_summary;
use crate::error::CliError;

/// The line before the summary.
pub(crate) const BEGIN: &str = "<!-- podq report: begin -->";
/// The line after it.
pub(crate) const END: &str = "<!-- podq report: end -->";

/// Writes `report`'s summary into `page`, linking to the report in `out`.
///
/// # Errors
///
/// [`CliError::Failed`] when the page cannot be read or written, or lacks the marker lines.
pub(crate) fn write(page: &Path, out: &Path, report: &Value) -> Result<(), CliError> {
    let name = page.display();
    let text = std::fs::read_to_string(page)
        .map_err(|err| CliError::Failed(format!("--page {name}: cannot read it: {err}")))?;
    let folder = page.parent().filter(|p| !p.as_os_str().is_empty());
    let link = super::relative(folder.unwrap_or(Path::new(".")), out);
    let link = format!("{}/", link.display());
    let summary = page_summary(report, &link);
    let replaced = replace_between(&text, &summary).ok_or_else(|| {
        CliError::Failed(format!(
            "--page {name}: it has no line '{BEGIN}' followed by a line '{END}'; add both \
             where the summary goes"
        ))
    })?;
    std::fs::write(page, replaced)
        .map_err(|err| CliError::Failed(format!("--page {name}: cannot write it: {err}")))
}

/// `text` with what lies between the [`BEGIN`] and [`END`] lines replaced by `summary`.
fn replace_between(text: &str, summary: &str) -> Option<String> {
    let begin = text.find(&format!("{BEGIN}\n"))? + BEGIN.len() + 1;
    let end = begin + text[begin..].find(END)?;
    Some(format!(
        "{}\n{}\n\n{}",
        &text[..begin],
        summary.trim_end(),
        &text[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_part_between_the_markers_changes() {
        let page = format!("# Title\n\nkept\n\n{BEGIN}\nold\nlines\n{END}\n\nkept too\n");
        let new = replace_between(&page, "new").unwrap();
        assert_eq!(
            new,
            format!("# Title\n\nkept\n\n{BEGIN}\n\nnew\n\n{END}\n\nkept too\n")
        );
        assert_eq!(
            replace_between(&new, "new").unwrap(),
            new,
            "writing twice changes nothing"
        );
        assert!(replace_between("no markers", "x").is_none());
    }
}
