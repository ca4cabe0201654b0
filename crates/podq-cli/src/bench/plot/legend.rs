//! The legend and the colours: podq in blue (its other scopes in shades of blue when a sweep
//! compares them), each peer in a colour of its own.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{DrawError, LEGEND_WIDTH};
use crate::bench::peers::Peer;
use crate::bench::report::Row;
use crate::bench::system::{System, KERNEL_ORDER};

/// podq's colour (the first), and the shades of its other scopes when they are compared with
/// a sweep (the others, in the kernel's scope order).
pub(super) const PODQ: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(23, 190, 207),
    RGBColor(57, 59, 121),
    RGBColor(107, 174, 214),
    RGBColor(8, 48, 107),
    RGBColor(158, 202, 225),
];

/// The peers' colours, in the order of [`Peer::KNOWN`].
pub(super) const PEERS: [RGBColor; 5] = [
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(214, 39, 40),
    RGBColor(127, 127, 127),
];

/// How a legend entry shows its series.
#[derive(Clone, Copy)]
pub(super) enum Mark {
    /// A filled square: a bar.
    Bar,
    /// A filled circle: a point.
    Dot,
    /// A thick line: the swept curve.
    Line,
    /// A dashed line: a configuration to compare the curve with.
    Dashed,
}

/// One legend entry.
pub(super) struct Key {
    /// What the entry names.
    pub(super) name: String,
    /// Its series' colour.
    pub(super) colour: RGBColor,
    /// How its series is drawn.
    pub(super) mark: Mark,
}

/// The legend, on its own area right of the chart, so that it never hides a point.
pub(super) fn draw_key<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    keys: &[Key],
) -> Result<(), DrawError<DB>> {
    /// Pixels from the top of the panel to the legend's box, below the caption.
    const TOP: i32 = 44;
    /// Pixels per entry.
    const LINE: i32 = 22;
    let count = i32::try_from(keys.len()).unwrap_or(0);
    let right = i32::try_from(LEGEND_WIDTH).unwrap_or(0) - 12;
    area.draw(&Rectangle::new(
        [(0, TOP), (right, TOP + 8 + LINE * count)],
        BLACK.mix(0.5),
    ))?;
    let font = ("sans-serif", 14).into_font().color(&BLACK);
    for (k, key) in (0..).zip(keys) {
        let y = TOP + 4 + LINE * k + LINE / 2;
        let colour = key.colour;
        match key.mark {
            Mark::Bar => area.draw(&Rectangle::new(
                [(10, y - 7), (26, y + 7)],
                colour.mix(0.8).filled(),
            ))?,
            Mark::Dot => area.draw(&Circle::new((18, y), 6, colour.filled()))?,
            Mark::Line => area.draw(&PathElement::new(
                vec![(8, y), (28, y)],
                colour.stroke_width(3),
            ))?,
            Mark::Dashed => {
                for x in [8, 22] {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + 6, y)],
                        colour.stroke_width(2),
                    ))?;
                }
            }
        }
        area.draw_text(&key.name, &font, (36, y - 8))?;
    }
    Ok(())
}

/// The legend's groups of a bar chart, in order of first appearance: podq (every scope in
/// one colour), then each peer.
pub(super) fn legend_groups(rows: &[&Row]) -> Vec<(&'static str, RGBColor)> {
    let mut groups: Vec<(&'static str, RGBColor)> = Vec::new();
    for row in rows {
        let name = legend_name(row.system);
        if !groups.iter().any(|(n, _)| *n == name) {
            groups.push((name, colour_of(row.system, false)));
        }
    }
    groups
}

/// `podq` or the peer's name.
pub(super) fn legend_name(system: System) -> &'static str {
    system.name()
}

/// `podq cpu` or the peer's name: a configuration drawn as a reference line.
pub(super) fn reference_name(system: System) -> String {
    match system.scope() {
        Some(scope) => format!("podq {scope}"),
        None => system.name().to_owned(),
    }
}

/// A system's colour: podq's blue (with `by_scope`, a shade per scope), or the peer's.
pub(super) fn colour_of(system: System, by_scope: bool) -> RGBColor {
    match system {
        System::Podq { scope, .. } => {
            if !by_scope {
                return PODQ[0];
            }
            let shade = KERNEL_ORDER.iter().position(|s| *s == scope).unwrap_or(0);
            PODQ[1 + shade % (PODQ.len() - 1)]
        }
        System::Peer(peer) => {
            let index = Peer::KNOWN.iter().position(|p| *p == peer).unwrap_or(0);
            PEERS[index % PEERS.len()]
        }
    }
}
