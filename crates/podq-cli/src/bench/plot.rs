//! `--plot FILE.svg`: items/sec (median bar, min-max whisker) and the queue call's p50 per
//! configuration, drawn with plotters' SVG backend.

use std::path::Path;

use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::args::Settings;
use super::report::Row;
use crate::error::CliError;

/// Pixels per configuration along the x axis.
const WIDTH_PER_ROW: u32 = 90;
/// Narrowest drawing, in pixels, so that the captions fit.
const MIN_WIDTH: u32 = 640;
/// Height of each of the two panels, in pixels.
const PANEL_HEIGHT: u32 = 360;

/// A panel's chart: configurations (segments) along x, a value along y.
type Panel<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<SegmentedCoord<RangedCoordusize>, RangedCoordf64>>;

/// Draws `rows` into the SVG file at `path`.
///
/// # Errors
///
/// [`CliError::Failed`] naming the file when it cannot be drawn or written.
pub(crate) fn draw(path: &Path, rows: &[Row], settings: &Settings) -> Result<(), CliError> {
    let fail = |err: &dyn std::fmt::Display| {
        CliError::Failed(format!(
            "cannot draw the plot into {}: {err}",
            path.display()
        ))
    };
    let labels: Vec<String> = rows
        .iter()
        .map(|row| {
            if settings.workloads.len() > 1 {
                format!("{} {}", row.workload.name(), row.label(settings))
            } else {
                row.label(settings)
            }
        })
        .collect();
    let count = rows.len();
    let width =
        MIN_WIDTH.max(WIDTH_PER_ROW * u32::try_from(count).unwrap_or(u32::MAX / WIDTH_PER_ROW));
    {
        let root = SVGBackend::new(path, (width, 2 * PANEL_HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let (upper, lower) = root.split_vertically(PANEL_HEIGHT);
        let label_of = |x: &SegmentValue<usize>| match x {
            SegmentValue::Exact(i) | SegmentValue::CenterOf(i) => {
                labels.get(*i).cloned().unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        };

        let top = rows
            .iter()
            .map(|r| r.summary.items_per_sec_max)
            .fold(1.0, f64::max)
            * 1.1;
        let caption = "items/sec (bar: median, line: min-max)";
        let mut chart =
            panel(&upper, caption, "items/sec", top, count, &label_of).map_err(|e| fail(&e))?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, row)| {
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), row.summary.items_per_sec),
                    ],
                    BLUE.mix(0.5).filled(),
                );
                bar.set_margin(0, 0, 12, 12);
                bar
            }))
            .map_err(|e| fail(&e))?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, row)| {
                PathElement::new(
                    vec![
                        (SegmentValue::CenterOf(i), row.summary.items_per_sec_min),
                        (SegmentValue::CenterOf(i), row.summary.items_per_sec_max),
                    ],
                    BLACK.stroke_width(2),
                )
            }))
            .map_err(|e| fail(&e))?;

        let top = rows
            .iter()
            .map(|r| r.summary.queue.p50)
            .max()
            .unwrap_or(1)
            .max(1) as f64
            * 1.1;
        let caption = "queue call p50 (ns)";
        let mut chart =
            panel(&lower, caption, "ns", top, count, &label_of).map_err(|e| fail(&e))?;
        let points: Vec<(SegmentValue<usize>, f64)> = rows
            .iter()
            .enumerate()
            .map(|(i, row)| (SegmentValue::CenterOf(i), row.summary.queue.p50 as f64))
            .collect();
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&(ref x, y)| Circle::new((x.clone(), y), 5, RED.filled())),
            )
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(())
}

/// The chart of one panel drawn on `area`: `caption` above, one segment per configuration along
/// x (labelled by `label_of`), 0 to `top` along y (described as `y_desc`), and its mesh.
///
/// # Errors
///
/// What plotters reports when the chart or its mesh cannot be drawn.
fn panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    y_desc: &str,
    top: f64,
    count: usize,
    label_of: &dyn Fn(&SegmentValue<usize>) -> String,
) -> Result<Panel<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d((0..count).into_segmented(), 0.0..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(count)
        .x_label_formatter(label_of)
        .y_desc(y_desc)
        .draw()?;
    Ok(chart)
}
