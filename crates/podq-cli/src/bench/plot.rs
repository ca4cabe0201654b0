//! `--plot FILE.svg`: what a person reads at a glance, drawn with plotters' SVG backend.
//!
//! The title says the workload, the producers and the machine. Each workload gets two panels,
//! items/s and the queue call's p50, whose axes give units and numbers with k/M or thousands
//! separators. podq is blue; each peer has a colour of its own, named in the legend.
//!
//! * Without `--sweep`, one bar per configuration (the median, with a min-max whisker) and
//!   one p50 point per configuration, each labelled with its value.
//! * With `--sweep shard-size=...`, cache_shard's items/s and p50 are curves against the shard
//!   size, each point labelled with its pools and workers (medians over the runs); every other
//!   configuration measured (other scopes, the peers) is a dashed line across the panel, to
//!   compare the curve with.
//!
//! Files: this one lays out the panels and draws them; `legend.rs` the colours and the legend;
//! `numbers.rs` how numbers read.

use std::path::Path;

use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::args::Settings;
use super::machine::Machine;
use super::report::Row;
use super::workload::Workload;
use crate::error::CliError;

use legend::{colour_of, draw_key, legend_groups, legend_name, reference_name, Key, Mark, PODQ};
use numbers::{si, thousands, thousands_f64};

mod legend;
mod numbers;

/// Pixels per configuration (bars) or swept value (curves) along the x axis.
const WIDTH_PER_ROW: u32 = 110;
/// Narrowest drawing, in pixels, so that the captions and the legend fit.
const MIN_WIDTH: u32 = 1000;
/// Width of the legend's area right of each panel, in pixels.
const LEGEND_WIDTH: u32 = 180;
/// Height of each panel, in pixels.
const PANEL_HEIGHT: u32 = 380;
/// Height of the title's two lines, in pixels.
const TITLE_HEIGHT: u32 = 64;

/// A panel's chart: configurations or swept values (segments) along x, a value along y.
type Panel<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<SegmentedCoord<RangedCoordusize>, RangedCoordf64>>;

/// A panel's area: where its chart goes, and where its legend goes (right of it).
type Pane<DB> = (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>);

/// What plotters reports when drawing fails.
type DrawError<DB> = DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>;

/// Draws `rows`, measured on `machine`, into the SVG file at `path`.
///
/// # Errors
///
/// [`CliError::Failed`] naming the file when it cannot be drawn or written.
pub(crate) fn draw(
    path: &Path,
    rows: &[Row],
    settings: &Settings,
    machine: &Machine,
) -> Result<(), CliError> {
    let fail = |err: &dyn std::fmt::Display| {
        CliError::Failed(format!(
            "cannot draw the plot into {}: {err}",
            path.display()
        ))
    };
    let per_workload = settings
        .workloads
        .iter()
        .map(|w| rows.iter().filter(|r| r.workload == *w).count())
        .max()
        .unwrap_or(1);
    let width = MIN_WIDTH.max(WIDTH_PER_ROW.saturating_mul(count_u32(per_workload)));
    let panels = 2 * count_u32(settings.workloads.len()).max(1);
    let height = TITLE_HEIGHT + panels * PANEL_HEIGHT;
    {
        let root = SVGBackend::new(path, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let (title, body) = root.split_vertically(TITLE_HEIGHT);
        draw_title(&title, settings, machine).map_err(|e| fail(&e))?;
        let areas: Vec<Pane<SVGBackend<'_>>> = body
            .split_evenly((panels as usize, 1))
            .into_iter()
            .map(|area| area.split_horizontally(width - LEGEND_WIDTH))
            .collect();
        for (workload, pair) in settings.workloads.iter().zip(areas.chunks(2)) {
            let rows: Vec<&Row> = rows.iter().filter(|r| r.workload == *workload).collect();
            let [upper, lower] = pair else { continue };
            if settings.sweeping {
                draw_sweep(upper, lower, *workload, &rows).map_err(|e| fail(&e))?;
            } else {
                draw_bars(upper, lower, *workload, &rows, settings).map_err(|e| fail(&e))?;
            }
        }
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(())
}

/// Two lines: what was measured, and on which machine.
fn draw_title<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    settings: &Settings,
    machine: &Machine,
) -> Result<(), DrawError<DB>> {
    let workloads: Vec<&str> = settings.workloads.iter().map(|w| w.name()).collect();
    let runs = match settings.runs {
        1 => "1 run".to_owned(),
        n => format!("median of {n} runs"),
    };
    let works: Vec<u64> = settings
        .workloads
        .iter()
        .map(|&w| settings.work_ns(w))
        .collect();
    let work = if works.iter().all(|&ns| ns == works[0]) {
        match works.first() {
            None | Some(0) => String::new(),
            Some(&ns) => format!(", {} ns of work per item", thousands(ns)),
        }
    } else {
        let each: Vec<String> = settings
            .workloads
            .iter()
            .zip(&works)
            .map(|(w, &ns)| format!("{} {} ns", w.name(), thousands(ns)))
            .collect();
        format!(", work per item: {}", each.join(", "))
    };
    let what = format!(
        "podq bench, workload {}: {} producer threads x {} items{work}, {runs}",
        workloads.join(" and "),
        settings.threads(),
        thousands(settings.workloads.first().map_or(0, |&w| settings.items(w))),
    );
    let on = machine.summary().trim_start_matches("machine: ").to_owned();
    area.draw_text(
        &what,
        &("sans-serif", 22).into_font().color(&BLACK),
        (12, 8),
    )?;
    area.draw_text(
        &format!("on {on}"),
        &("sans-serif", 15).into_font().color(&BLACK.mix(0.75)),
        (12, 38),
    )?;
    Ok(())
}

/// One bar (median, min-max whisker) per configuration above, one p50 point per
/// configuration below, coloured by system, each with its value.
fn draw_bars<DB: DrawingBackend>(
    upper: &Pane<DB>,
    lower: &Pane<DB>,
    workload: Workload,
    rows: &[&Row],
    settings: &Settings,
) -> Result<(), DrawError<DB>> {
    let labels: Vec<String> = rows.iter().map(|row| row.label(settings)).collect();
    let label_of = |x: &SegmentValue<usize>| match x {
        SegmentValue::Exact(i) | SegmentValue::CenterOf(i) => {
            labels.get(*i).cloned().unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    };
    let legend = legend_groups(rows);

    let top = rows
        .iter()
        .map(|r| r.summary.items_per_sec_max)
        .fold(1.0, f64::max)
        * 1.15;
    let caption = format!("{}: items/s (bar: median, line: min-max)", workload.name());
    let axes = Axes {
        caption: &caption,
        x_desc: "configuration",
        y_desc: "items/s",
        top,
        count: rows.len(),
        x_label: &label_of,
        y_label: &si,
    };
    let mut chart = panel(&upper.0, &axes)?;
    for (name, colour) in &legend {
        let colour = *colour;
        chart.draw_series(
            rows.iter()
                .enumerate()
                .filter(|(_, row)| legend_name(row.system) == *name)
                .map(|(i, row)| {
                    let mut bar = Rectangle::new(
                        [
                            (SegmentValue::Exact(i), 0.0),
                            (right_edge(i, rows.len()), row.summary.items_per_sec),
                        ],
                        colour.mix(0.8).filled(),
                    );
                    bar.set_margin(0, 0, 14, 14);
                    bar
                }),
        )?;
    }
    chart.draw_series(rows.iter().enumerate().map(|(i, row)| {
        PathElement::new(
            vec![
                (SegmentValue::CenterOf(i), row.summary.items_per_sec_min),
                (SegmentValue::CenterOf(i), row.summary.items_per_sec_max),
            ],
            BLACK.stroke_width(2),
        )
    }))?;
    draw_labels(
        &mut chart,
        rows.iter().enumerate().map(|(i, row)| {
            (
                (SegmentValue::CenterOf(i), row.summary.items_per_sec_max),
                si(&row.summary.items_per_sec),
            )
        }),
    )?;
    let key = |mark| -> Vec<Key> {
        legend
            .iter()
            .map(|(name, colour)| Key {
                name: (*name).to_owned(),
                colour: *colour,
                mark,
            })
            .collect()
    };
    draw_key(&upper.1, &key(Mark::Bar))?;

    let top = rows
        .iter()
        .map(|r| r.summary.queue.p50)
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.2;
    let caption = format!("{}: queue call p50 (ns)", workload.name());
    let axes = Axes {
        caption: &caption,
        y_desc: "queue call p50 (ns)",
        top,
        y_label: &thousands_f64,
        ..axes
    };
    let mut chart = panel(&lower.0, &axes)?;
    for (name, colour) in &legend {
        let colour = *colour;
        chart.draw_series(
            rows.iter()
                .enumerate()
                .filter(|(_, row)| legend_name(row.system) == *name)
                .map(|(i, row)| {
                    Circle::new(
                        (SegmentValue::CenterOf(i), row.summary.queue.p50 as f64),
                        6,
                        colour.filled(),
                    )
                }),
        )?;
    }
    draw_labels(
        &mut chart,
        rows.iter().enumerate().map(|(i, row)| {
            let p50 = row.summary.queue.p50;
            (
                (SegmentValue::CenterOf(i), p50 as f64),
                format!("{} ns", thousands(p50)),
            )
        }),
    )?;
    draw_key(&lower.1, &key(Mark::Dot))
}

/// cache_shard's items/s and p50 as curves against the shard size, the other configurations
/// as dashed lines across.
fn draw_sweep<DB: DrawingBackend>(
    upper: &Pane<DB>,
    lower: &Pane<DB>,
    workload: Workload,
    rows: &[&Row],
) -> Result<(), DrawError<DB>> {
    let mut swept: Vec<(usize, &Row)> = rows
        .iter()
        .filter_map(|row| Some((row.system.shard_size()?, *row)))
        .collect();
    swept.sort_by_key(|(size, _)| *size);
    let others: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|row| row.system.shard_size().is_none())
        .collect();
    let sizes: Vec<usize> = swept.iter().map(|(size, _)| *size).collect();
    let label_of = |x: &SegmentValue<usize>| match x {
        SegmentValue::Exact(i) | SegmentValue::CenterOf(i) => {
            sizes.get(*i).map(ToString::to_string).unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    };

    let top = rows
        .iter()
        .map(|r| r.summary.items_per_sec_max)
        .fold(1.0, f64::max)
        * 1.15;
    let caption = format!(
        "{}: items/s against the cache shard size (median, min-max; pools and workers)",
        workload.name()
    );
    let axes = Axes {
        caption: &caption,
        x_desc: "cache shard size (cores per shard)",
        y_desc: "items/s",
        top,
        count: swept.len(),
        x_label: &label_of,
        y_label: &si,
    };
    let mut chart = panel(&upper.0, &axes)?;
    let curve = |value: fn(&Row) -> f64| -> Vec<(SegmentValue<usize>, f64)> {
        swept
            .iter()
            .enumerate()
            .map(|(i, (_, row))| (SegmentValue::CenterOf(i), value(row)))
            .collect()
    };
    draw_references(&mut chart, &others, |row| row.summary.items_per_sec)?;
    draw_curve(&mut chart, curve(|row| row.summary.items_per_sec))?;
    chart.draw_series(swept.iter().enumerate().map(|(i, (_, row))| {
        PathElement::new(
            vec![
                (SegmentValue::CenterOf(i), row.summary.items_per_sec_min),
                (SegmentValue::CenterOf(i), row.summary.items_per_sec_max),
            ],
            PODQ[0].stroke_width(2),
        )
    }))?;
    draw_labels(
        &mut chart,
        swept.iter().enumerate().map(|(i, (_, row))| {
            let count = |n: Option<u64>, what: &str| {
                n.map_or_else(String::new, |n| match n {
                    1 => format!(", 1 {what}"),
                    n => format!(", {n} {what}s"),
                })
            };
            let pools = count(row.summary.pools.map(|p| p as u64), "pool");
            let workers = count(row.summary.workers, "worker");
            (
                (SegmentValue::CenterOf(i), row.summary.items_per_sec_max),
                format!("{}{pools}{workers}", si(&row.summary.items_per_sec)),
            )
        }),
    )?;
    let key: Vec<Key> = others
        .iter()
        .map(|row| Key {
            name: reference_name(row.system),
            colour: colour_of(row.system, true),
            mark: Mark::Dashed,
        })
        .chain(std::iter::once(Key {
            name: "podq cache_shard".to_owned(),
            colour: PODQ[0],
            mark: Mark::Line,
        }))
        .collect();
    draw_key(&upper.1, &key)?;

    let top = rows
        .iter()
        .map(|r| r.summary.queue.p50)
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.2;
    let caption = format!(
        "{}: queue call p50 against the cache shard size",
        workload.name()
    );
    let axes = Axes {
        caption: &caption,
        y_desc: "queue call p50 (ns)",
        top,
        y_label: &thousands_f64,
        ..axes
    };
    let mut chart = panel(&lower.0, &axes)?;
    draw_references(&mut chart, &others, |row| row.summary.queue.p50 as f64)?;
    draw_curve(&mut chart, curve(|row| row.summary.queue.p50 as f64))?;
    draw_labels(
        &mut chart,
        swept.iter().enumerate().map(|(i, (_, row))| {
            let p50 = row.summary.queue.p50;
            (
                (SegmentValue::CenterOf(i), p50 as f64),
                format!("{} ns", thousands(p50)),
            )
        }),
    )?;
    draw_key(&lower.1, &key)
}

/// The swept configuration's curve: a line through circles, in podq's colour.
fn draw_curve<'a, DB: DrawingBackend + 'a>(
    chart: &mut Panel<'a, DB>,
    points: Vec<(SegmentValue<usize>, f64)>,
) -> Result<(), DrawError<DB>> {
    let colour = PODQ[0];
    chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(3)))?;
    chart.draw_series(
        points
            .into_iter()
            .map(|point| Circle::new(point, 6, colour.filled())),
    )?;
    Ok(())
}

/// A dashed line across the panel, at `value(row)`, for each of `rows`, in its colour and
/// named in the legend.
fn draw_references<'a, DB: DrawingBackend + 'a>(
    chart: &mut Panel<'a, DB>,
    rows: &[&Row],
    value: impl Fn(&Row) -> f64,
) -> Result<(), DrawError<DB>> {
    for row in rows {
        let colour = colour_of(row.system, true);
        let y = value(row);
        let line = [(SegmentValue::Exact(0), y), (SegmentValue::Last, y)];
        chart.draw_series(DashedLineSeries::new(line, 8, 6, colour.stroke_width(2)))?;
    }
    Ok(())
}

/// The right edge of segment `i` of `count`.
fn right_edge(i: usize, count: usize) -> SegmentValue<usize> {
    if i + 1 < count {
        SegmentValue::Exact(i + 1)
    } else {
        SegmentValue::Last
    }
}

/// Draws each text centred a few pixels above its point.
fn draw_labels<'a, DB: DrawingBackend + 'a>(
    chart: &mut Panel<'a, DB>,
    labels: impl Iterator<Item = ((SegmentValue<usize>, f64), String)>,
) -> Result<(), DrawError<DB>> {
    let style = ("sans-serif", 13)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    chart.draw_series(
        labels.map(|(at, text)| EmptyElement::at(at) + Text::new(text, (0, -9), style.clone())),
    )?;
    Ok(())
}

/// What a panel shows: its caption, axes and how their labels read.
#[derive(Clone, Copy)]
struct Axes<'a> {
    /// Above the panel.
    caption: &'a str,
    /// Under the x axis.
    x_desc: &'a str,
    /// Beside the y axis, with its unit.
    y_desc: &'a str,
    /// The top of the y axis (its bottom is 0).
    top: f64,
    /// Segments along x.
    count: usize,
    /// A segment's label.
    x_label: &'a dyn Fn(&SegmentValue<usize>) -> String,
    /// A y value's label.
    y_label: &'a dyn Fn(&f64) -> String,
}

/// The chart of one panel drawn on `area`, with its mesh.
fn panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    axes: &Axes<'_>,
) -> Result<Panel<'a, DB>, DrawError<DB>> {
    let mut chart = ChartBuilder::on(area)
        .caption(axes.caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(90)
        .build_cartesian_2d(
            (0..axes.count.saturating_sub(1)).into_segmented(),
            0.0..axes.top,
        )?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .x_labels(axes.count)
        .x_label_formatter(axes.x_label)
        .y_label_formatter(axes.y_label)
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .draw()?;
    Ok(chart)
}

/// `n` as a `u32`, saturating.
fn count_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
