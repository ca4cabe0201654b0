//! `--plot FILE.svg`: items/sec per configuration; a shard-size sweep as a line over the
//! shard size, the other scopes as horizontal lines; ranges as whiskers under
//! `--uncertainty`.

use std::path::Path;

use plotters::prelude::*;
use podq::AffinityScope;
use podq_sim::{Profile, SimMachine};

use super::Row;
use crate::error::CliError;

/// The drawing's size in pixels.
const SIZE: (u32, u32) = (800, 480);

/// Draws `rows` into the SVG file at `path`; a sweep line per pull setting, named by it when
/// `show_pull`.
///
/// # Errors
///
/// [`CliError::Failed`] naming the file when it cannot be drawn or written.
pub(crate) fn draw(
    path: &Path,
    rows: &[Row],
    machine: &SimMachine,
    profile: &Profile,
    show_pull: bool,
) -> Result<(), CliError> {
    let fail = |err: &dyn std::fmt::Display| {
        CliError::Failed(format!(
            "cannot draw the plot into {}: {err}",
            path.display()
        ))
    };
    let shards: Vec<&Row> = rows
        .iter()
        .filter(|r| r.scenario.scope == AffinityScope::CacheShard)
        .collect();
    let others: Vec<&Row> = rows
        .iter()
        .filter(|r| r.scenario.scope != AffinityScope::CacheShard)
        .collect();
    let top = rows
        .iter()
        .map(|r| r.range.map_or(r.outcome.items_per_sec, |(_, hi)| hi))
        .fold(1.0, f64::max)
        * 1.15;
    let largest = shards
        .iter()
        .map(|r| r.scenario.shard_size)
        .max()
        .unwrap_or(8)
        .max(2);
    {
        let root = SVGBackend::new(path, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let caption = format!(
            "{} {} on {} (profile {})",
            rows.first().map_or("queue", |r| r.scenario.workload.name()),
            "items/sec by cache shard size",
            machine.name(),
            profile.name
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(90)
            .build_cartesian_2d(0.5f64..largest as f64 + 0.5, 0.0..top)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc("cache_shard size (cores)")
            .y_desc("items/sec")
            .y_label_formatter(&|v| format!("{:.1}M", v / 1e6))
            .draw()
            .map_err(|e| fail(&e))?;
        for (pull, color) in [(true, BLUE), (false, RED)] {
            let line: Vec<&Row> = shards
                .iter()
                .copied()
                .filter(|r| r.scenario.pull == pull)
                .collect();
            let Some(first) = line.first() else {
                continue;
            };
            let points: Vec<(f64, f64)> = line
                .iter()
                .map(|r| (r.scenario.shard_size as f64, r.outcome.items_per_sec))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| fail(&e))?
                .label(first.label(false, show_pull))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(|e| fail(&e))?;
            chart
                .draw_series(line.iter().filter_map(|r| {
                    r.range.map(|(lo, hi)| {
                        let x = r.scenario.shard_size as f64;
                        PathElement::new(vec![(x, lo), (x, hi)], BLACK.stroke_width(1))
                    })
                }))
                .map_err(|e| fail(&e))?;
        }
        let palette = [GREEN, MAGENTA, CYAN, BLACK, YELLOW, RGBColor(255, 128, 0)];
        for (i, row) in others.iter().enumerate() {
            let color = palette[i % palette.len()];
            let y = row.outcome.items_per_sec;
            chart
                .draw_series(LineSeries::new(
                    vec![(0.5, y), (largest as f64 + 0.5, y)],
                    color.stroke_width(1),
                ))
                .map_err(|e| fail(&e))?
                .label(row.label(false, show_pull))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(())
}
