//! Text tables and colour for a person's terminal: columns as wide as their widest cell,
//! one free-text column cut with "…" to fit the terminal, and ANSI colour only when the
//! caller says so.
//!
//! Whether to colour and how wide the terminal is are decided at the edge (`ui`) and come
//! in as a [`Look`]; nothing here asks the terminal or the environment. Widths count chars,
//! which is right for the ASCII and the common one-column symbols tables hold.

/// How a table is drawn: in colour or not, and for a terminal this many columns wide
/// (`None`: as wide as its content, for a pipe or a file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Look {
    pub colour: bool,
    pub width: Option<usize>,
}

impl Look {
    /// Plain text of any width: what a pipe, a log or a model gets.
    pub const PLAIN: Look = Look {
        colour: false,
        width: None,
    };
}

/// An SGR parameter string ("32", "1;31", "38;5;208"): a colour or a style.
pub type Sgr = &'static str;

pub const GREEN: Sgr = "32";
pub const YELLOW: Sgr = "33";
pub const RED: Sgr = "31";
pub const BOLD_RED: Sgr = "1;31";
pub const CYAN: Sgr = "36";
pub const DIM: Sgr = "2";
pub const BOLD: Sgr = "1";

/// The terminal colour of a colour name as rosters write it (Claude Code's palette: red,
/// blue, green, yellow, purple, orange, pink, cyan); `None` for any other name.
pub fn palette(name: Option<&str>) -> Option<Sgr> {
    Some(match name? {
        "red" => "31",
        "blue" => "34",
        "green" => "32",
        "yellow" => "33",
        "purple" => "35",
        "orange" => "38;5;208",
        "pink" => "38;5;205",
        "cyan" => "36",
        _ => return None,
    })
}

/// `text` in `sgr` when `on`, else as it is.
pub fn paint(text: &str, sgr: Option<Sgr>, on: bool) -> String {
    match sgr {
        Some(sgr) if on && !text.is_empty() => format!("\x1b[{sgr}m{text}\x1b[0m"),
        _ => text.to_owned(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One cell: its text and, maybe, its colour.
#[derive(Debug, Clone)]
pub struct Cell {
    pub text: String,
    pub sgr: Option<Sgr>,
}

impl Cell {
    pub fn new(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            sgr: None,
        }
    }

    pub fn painted(text: impl Into<String>, sgr: Option<Sgr>) -> Cell {
        Cell {
            text: text.into(),
            sgr,
        }
    }
}

/// A table: headers, rows, and the one column whose text may be cut (the last, free-text
/// one: a subject, a reason).
#[derive(Debug, Clone)]
pub struct Table {
    columns: Vec<(&'static str, Align)>,
    rows: Vec<Vec<Cell>>,
    free: Option<usize>,
    /// Columns hidden, first to last, while the table is wider than the terminal.
    droppable: Vec<usize>,
    indent: usize,
}

/// Between two columns.
const GAP: usize = 2;
/// The free column is never cut narrower than this; past it the line may wrap.
const MIN_FREE: usize = 12;
/// Droppable columns go before the free column gets narrower than this: a reason cut to
/// a dozen letters says little.
const WANTED_FREE: usize = 24;

impl Table {
    pub fn new(columns: &[(&'static str, Align)]) -> Table {
        Table {
            columns: columns.to_vec(),
            rows: Vec::new(),
            free: None,
            droppable: Vec::new(),
            indent: 2,
        }
    }

    /// The column cut with "…" when the table is wider than the terminal.
    pub fn free(mut self, column: usize) -> Table {
        self.free = Some(column);
        self
    }

    /// Columns to hide, in this order, while the table does not fit the terminal.
    pub fn droppable(mut self, columns: &[usize]) -> Table {
        self.droppable = columns.to_vec();
        self
    }

    pub fn indent(mut self, indent: usize) -> Table {
        self.indent = indent;
        self
    }

    pub fn row(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.columns.len());
        self.rows.push(cells);
    }

    /// The header line and one line per row, each ending in a newline, none with trailing
    /// blanks.
    pub fn render(&self, look: Look) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|(h, _)| width(h)).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(&cell.text));
            }
        }
        let mut shown = vec![true; widths.len()];
        if let Some(limit) = look.width {
            let total = |shown: &[bool], free_at: Option<(usize, usize)>| {
                let cols = widths
                    .iter()
                    .zip(shown)
                    .enumerate()
                    .filter(|(_, (_, s))| **s);
                let (n, sum) = cols.fold((0, 0), |(n, sum), (i, (w, _))| {
                    let w = match free_at {
                        Some((f, least)) if f == i => least.min(*w),
                        _ => *w,
                    };
                    (n + 1, sum + w)
                });
                self.indent + sum + GAP * (n.max(1) - 1)
            };
            for &d in &self.droppable {
                if total(&shown, self.free.map(|f| (f, WANTED_FREE))) <= limit {
                    break;
                }
                shown[d] = false;
            }
            if let Some(free) = self.free {
                let over = total(&shown, None).saturating_sub(limit);
                widths[free] = widths[free]
                    .saturating_sub(over)
                    .max(MIN_FREE.min(widths[free]));
            }
        }
        let header: Vec<Cell> = self
            .columns
            .iter()
            .map(|(h, _)| Cell::painted(*h, Some(BOLD)))
            .collect();
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = " ".repeat(self.indent);
            let last = shown.iter().rposition(|s| *s).unwrap_or(0);
            for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                if !shown[i] {
                    continue;
                }
                let text = fit(&cell.text, *w);
                let pad = " ".repeat(w - width(&text));
                let painted = paint(&text, cell.sgr, look.colour);
                match self.columns[i].1 {
                    Align::Left if i == last => line.push_str(&painted),
                    Align::Left => line.push_str(&format!("{painted}{pad}")),
                    Align::Right => line.push_str(&format!("{pad}{painted}")),
                }
                if i != last {
                    line.push_str(&" ".repeat(GAP));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

pub fn width(text: &str) -> usize {
    text.chars().count()
}

/// `text` cut to `max` columns, its last one "…" when anything was cut.
pub fn fit(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new(&[
            ("NAME", Align::Left),
            ("N", Align::Right),
            ("SUBJECT", Align::Left),
        ])
        .free(2);
        t.row(vec![
            Cell::new("a-rather-long-name"),
            Cell::new("12"),
            Cell::new("a subject that goes on and on"),
        ]);
        t.row(vec![Cell::new("bo"), Cell::new("3"), Cell::new("short")]);
        t
    }

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        assert_eq!(
            table().render(Look::PLAIN),
            "  NAME                 N  SUBJECT\n  \
             a-rather-long-name  12  a subject that goes on and on\n  \
             bo                   3  short\n"
        );
    }

    #[test]
    fn only_the_free_column_is_cut_to_the_width() {
        let out = table().render(Look {
            colour: false,
            width: Some(40),
        });
        assert_eq!(
            out,
            "  NAME                 N  SUBJECT\n  \
             a-rather-long-name  12  a subject tha…\n  \
             bo                   3  short\n"
        );
        assert!(out.lines().all(|l| width(l) <= 40), "{out}");
    }

    #[test]
    fn colour_only_when_asked_and_padding_stays_outside_it() {
        let mut t = Table::new(&[("S", Align::Left), ("X", Align::Left)]);
        t.row(vec![Cell::painted("ok", Some(GREEN)), Cell::new("x")]);
        let plain = t.render(Look::PLAIN);
        assert!(!plain.contains('\x1b'), "{plain:?}");
        let coloured = t.render(Look {
            colour: true,
            width: None,
        });
        assert!(coloured.contains("\x1b[32mok\x1b[0m  x"), "{coloured:?}");
    }

    #[test]
    fn droppable_columns_go_first_when_the_table_does_not_fit() {
        let out = table().droppable(&[1]).render(Look {
            colour: false,
            width: Some(36),
        });
        assert_eq!(
            out,
            "  NAME                SUBJECT\n  \
             a-rather-long-name  a subject tha…\n  \
             bo                  short\n"
        );
    }

    #[test]
    fn fit_marks_a_cut() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abcd", 4), "abcd");
        assert_eq!(fit("abcd", 0), "");
    }
}
