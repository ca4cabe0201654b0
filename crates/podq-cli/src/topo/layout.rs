//! Text layout for `podq topo`: wrapped lists and aligned tables that stay readable from a
//! 2-CPU laptop to a 256-CPU server.

/// The width lines are kept within where the content allows (one item longer than that still
/// prints whole): wide enough for a pod table in several blocks, narrow enough for a terminal.
pub(super) const WIDTH: usize = 100;

/// Spaces between two columns of a table.
const COLUMN_GAP: usize = 2;
/// Spaces between two blocks of a table laid out side by side.
const BLOCK_GAP: usize = 5;

/// `items` separated by two spaces and wrapped at [`WIDTH`]. The first line continues a line
/// already at column `start`; later lines are indented by `indent` spaces.
pub(super) fn wrap(items: &[String], start: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut column = start;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            if column + COLUMN_GAP + item.len() > WIDTH {
                out.push('\n');
                out.push_str(&" ".repeat(indent));
                column = indent;
            } else {
                out.push_str(&" ".repeat(COLUMN_GAP));
                column += COLUMN_GAP;
            }
        }
        out.push_str(item);
        column += item.len();
    }
    out
}

/// How a table column is aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Align {
    /// Text flush left (CPU lists, names).
    Left,
    /// Text flush right (numbers).
    Right,
}

/// A table with a header row and aligned columns.
#[derive(Debug)]
pub(super) struct Table {
    /// Each column's header and alignment.
    columns: Vec<(String, Align)>,
    /// The rows, one cell per column.
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these column headers and alignments.
    pub(super) fn new(columns: &[(&str, Align)]) -> Self {
        Table {
            columns: columns.iter().map(|&(h, a)| (h.to_owned(), a)).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are blank.
    pub(super) fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table's lines, each indented by `indent` spaces. A table of more than `tall` rows is
    /// laid out in several blocks side by side (column-major, as `ls` does), as many as fit in
    /// [`WIDTH`], each with its own header.
    pub(super) fn render(&self, indent: usize, tall: usize) -> Vec<String> {
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|row| row.get(c).map(String::len))
                    .chain([self.columns[c].0.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let block_width =
            widths.iter().sum::<usize>() + COLUMN_GAP * widths.len().saturating_sub(1);
        let fit = (WIDTH.saturating_sub(indent) + BLOCK_GAP) / (block_width + BLOCK_GAP);
        let wanted = self.rows.len().div_ceil(tall.max(1));
        let blocks = fit.min(wanted).max(1);
        let per_block = self.rows.len().div_ceil(blocks).max(1);

        let header: Vec<String> = self.columns.iter().map(|(h, _)| h.clone()).collect();
        let mut lines = Vec::with_capacity(per_block + 1);
        let blocks_used = self.rows.len().div_ceil(per_block).max(1);
        lines.push(self.line(indent, &widths, (0..blocks_used).map(|_| header.as_slice())));
        for r in 0..per_block.min(self.rows.len()) {
            let cells = (0..blocks)
                .filter_map(|b| self.rows.get(b * per_block + r))
                .map(Vec::as_slice);
            lines.push(self.line(indent, &widths, cells));
        }
        lines
    }

    /// One printed line: the given rows' cells, aligned, blocks separated by [`BLOCK_GAP`].
    fn line<'a>(
        &self,
        indent: usize,
        widths: &[usize],
        blocks: impl Iterator<Item = &'a [String]>,
    ) -> String {
        let mut out = " ".repeat(indent);
        for (b, row) in blocks.enumerate() {
            if b > 0 {
                out.push_str(&" ".repeat(BLOCK_GAP));
            }
            for (c, width) in widths.iter().enumerate() {
                if c > 0 {
                    out.push_str(&" ".repeat(COLUMN_GAP));
                }
                let cell = row.get(c).map_or("", String::as_str);
                let pad = " ".repeat(width.saturating_sub(cell.len()));
                match self.columns[c].1 {
                    Align::Left => {
                        out.push_str(cell);
                        out.push_str(&pad);
                    }
                    Align::Right => {
                        out.push_str(&pad);
                        out.push_str(cell);
                    }
                }
            }
        }
        out.truncate(out.trim_end().len());
        out
    }
}

/// Rows of cells laid out as aligned columns (each column as wide as its widest cell, numbers
/// flush right), with the first cell of each row as its label. Columns that do not fit in
/// [`WIDTH`] continue in a further group of rows below, under the same labels.
pub(super) fn grid(rows: &[(&str, Vec<String>)], indent: usize) -> Vec<String> {
    let label_width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
    let columns = rows.iter().map(|(_, cells)| cells.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|(_, cells)| cells.get(c).map(String::len))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut lines = Vec::new();
    let mut start = 0;
    while start < columns || (start == 0 && columns == 0) {
        let mut end = start;
        let mut used = indent + label_width;
        while end < columns && (end == start || used + 1 + widths[end] <= WIDTH) {
            used += 1 + widths[end];
            end += 1;
        }
        for (label, cells) in rows {
            let mut line = format!("{}{label:<label_width$}", " ".repeat(indent));
            for (c, width) in widths.iter().enumerate().take(end).skip(start) {
                let cell = cells.get(c).map_or("", String::as_str);
                line.push_str(&format!(" {cell:>width$}"));
            }
            line.truncate(line.trim_end().len());
            lines.push(line);
        }
        if end == start {
            break;
        }
        start = end;
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn wrap_keeps_lines_within_width_and_indents_continuations() {
        let items: Vec<String> = (0..60).map(|i| format!("{i}-{}", i + 7)).collect();
        let text = wrap(&items, 10, 10);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 1);
        assert!(10 + lines[0].len() <= WIDTH);
        for line in &lines[1..] {
            assert!(line.len() <= WIDTH, "{line:?}");
            assert!(line.starts_with(&" ".repeat(10)) && !line.starts_with(&" ".repeat(11)));
        }
        let joined: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(joined, items.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn wrap_starts_where_the_caller_left_off() {
        let items: Vec<String> = (0..40).map(|i| format!("item{i}")).collect();
        let text = wrap(&items, 60, 4);
        let lines: Vec<&str> = text.lines().collect();
        assert!(60 + lines[0].len() <= WIDTH);
        assert!(lines[1].starts_with("    item") && !lines[1].starts_with("     "));
        assert_eq!(wrap(&[], 3, 3), "");
        assert_eq!(wrap(&items[..1], 3, 3), "item0");
    }

    #[test]
    fn table_aligns_columns() {
        let mut table = Table::new(&[("pod", Align::Right), ("CPUs", Align::Left)]);
        table.push(strings(&["0", "0-7,88-95"]));
        table.push(strings(&["10", "8"]));
        let lines = table.render(2, 16);
        assert_eq!(lines, ["  pod  CPUs", "    0  0-7,88-95", "   10  8"]);
    }

    #[test]
    fn long_table_goes_side_by_side_and_keeps_every_row() {
        let mut table = Table::new(&[("pod", Align::Right), ("CPUs", Align::Left)]);
        for i in 0..100 {
            table.push(vec![i.to_string(), format!("{}", i * 2)]);
        }
        let lines = table.render(2, 16);
        assert!(lines.len() < 100);
        assert!(lines.iter().all(|l| l.len() <= WIDTH));
        // Every pod id appears exactly once, as the first cell of a block.
        let mut ids: Vec<usize> = lines[1..]
            .iter()
            .flat_map(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words
                    .chunks(2)
                    .map(|c| c[0].parse::<usize>().unwrap())
                    .collect::<Vec<_>>()
            })
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn grid_aligns_and_wraps_columns() {
        let cpus: Vec<String> = (0..64).map(|c| c.to_string()).collect();
        let pods: Vec<String> = (0..64).map(|c| (c / 8).to_string()).collect();
        let lines = grid(&[("cpu", cpus), ("pod", pods)], 2);
        assert!(lines.len() >= 4 && lines.len().is_multiple_of(2));
        assert!(lines.iter().all(|l| l.len() <= WIDTH));
        assert!(lines[0].starts_with("  cpu 0 1 2"), "{lines:?}");
        assert!(lines[1].starts_with("  pod 0 0 0"), "{lines:?}");
        // A column of both rows ends at the same place: CPU 8 is the first in pod 1, and
        // CPU 10 (two digits wide) the third.
        let end_of =
            |line: &str, word: &str| line.find(&format!(" {word} ")).map(|i| i + 1 + word.len());
        assert_eq!(end_of(&lines[0], "8"), end_of(&lines[1], "1"));
        assert_eq!(
            lines[0].find(" 10 ").map(|i| i + 3),
            lines[1].find("1  1").map(|i| i + 4)
        );
    }
}
