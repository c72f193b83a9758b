//! Text in SVG figures as glyph outlines of the embedded DejaVu Sans, placed where the PNG
//! rasteriser puts them, so an SVG renders like its PNG in any viewer, with no font installed.
//!
//! plotters' SVG backend writes `<text font-family="sans-serif">`, which each viewer draws in
//! a font of its own choosing (wider or narrower than the one the layout was measured in).
//! `outline_text` replaces every such element by `<use>`s of glyph paths defined once per
//! document in `<defs>`. The placement repeats plotters' bitmap text drawing
//! (`plotters::style::font::ab_glyph`): the font scaled so ascent minus descent is the given
//! size, each glyph's pixel box at the pen's whole pixel, the baseline half the size below the
//! top anchor; the anchor box is the advance sum by the size over 1.24.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, GlyphId, OutlineCurve, ScaleFont};

/// A `<text>` element the SVG backend wrote that this module cannot read (a plotters change).
#[derive(Debug, thiserror::Error)]
#[error("SVG text element {index}: {what}")]
pub struct SvgTextError {
    index: usize,
    what: String,
}

/// The two faces the figures use: DejaVu Sans and DejaVu Sans Bold.
fn faces() -> &'static [FontRef<'static>; 2] {
    static FACES: OnceLock<[FontRef<'static>; 2]> = OnceLock::new();
    FACES.get_or_init(|| {
        let face = |bytes| FontRef::try_from_slice(bytes).expect("the embedded DejaVu is valid");
        [face(dejavu::sans::regular()), face(dejavu::sans::bold())]
    })
}

/// One `<text>` element's drawing parameters, as plotters' SVG backend wrote them.
struct TextElem {
    x: f64,
    y: f64,
    /// plotters' font size (the SVG's `font-size` times 1.24).
    size: f64,
    bold: bool,
    /// Horizontal anchor: -1 start, 0 middle, 1 end; vertical the same for top, center, bottom.
    h: i8,
    v: i8,
    rotate: Option<String>,
    paint: String,
    text: String,
}

/// `svg` with every `<text>` element drawn as outlines, the glyphs used defined once.
pub fn outline_text(svg: &str) -> Result<String, SvgTextError> {
    let mut out = String::with_capacity(svg.len() + svg.len() / 2);
    outline_text_each(svg, |piece| out.push_str(piece))?;
    Ok(out)
}

/// `outline_text`, handed to `emit` piece by piece instead of built: a figure of 100,000
/// points is 75 MB of SVG, and a second copy of it was the peak of drawing it. The text is
/// read twice, first for the glyphs used (their definitions go right after the `<svg>` tag),
/// then to emit it; a malformed text element is an error before anything is emitted.
pub fn outline_text_each(svg: &str, mut emit: impl FnMut(&str)) -> Result<(), SvgTextError> {
    let (mut used, mut scratch) = (BTreeSet::new(), String::new());
    each_piece(svg, |piece| {
        if let Piece::Text(elem) = piece {
            scratch.clear();
            glyphs(&elem, &mut scratch, &mut used);
        }
    })?;
    let mut defs = String::with_capacity(used.len() * 600 + 16);
    defs.push_str("\n<defs>");
    for &(bold, id) in &used {
        write_glyph_def(&mut defs, bold, GlyphId(id));
    }
    defs.push_str("</defs>");
    let mut pending = Some(defs);
    each_piece(svg, |piece| match piece {
        Piece::Raw(raw) => {
            let open_end = raw.find("<svg").and_then(|i| raw[i..].find('>').map(|j| i + j + 1));
            match (open_end, pending.take_if(|_| open_end.is_some())) {
                (Some(at), Some(defs)) => {
                    emit(&raw[..at]);
                    emit(&defs);
                    emit(&raw[at..]);
                }
                _ => emit(raw),
            }
        }
        Piece::Text(elem) => {
            scratch.clear();
            glyphs(&elem, &mut scratch, &mut used);
            emit(&scratch);
        }
    })
}

/// A stretch of an SVG document: text outside `<text>` elements, or one parsed element.
enum Piece<'a> {
    Raw(&'a str),
    Text(TextElem),
}

/// Hand `f` the pieces of `svg` in order; a `<text>` element that does not parse is an error.
fn each_piece(svg: &str, mut f: impl FnMut(Piece<'_>)) -> Result<(), SvgTextError> {
    let mut rest = svg;
    let mut index = 0;
    while let Some(start) = rest.find("<text ") {
        f(Piece::Raw(&rest[..start]));
        let close = rest[start..]
            .find("</text>")
            .ok_or_else(|| SvgTextError { index, what: "no closing </text>".into() })?;
        f(Piece::Text(parse(&rest[start..start + close], index)?));
        rest = &rest[start + close + "</text>".len()..];
        index += 1;
    }
    f(Piece::Raw(rest));
    Ok(())
}

/// Read the `index`-th element, from `<text ` up to (not including) `</text>`.
fn parse(elem: &str, index: usize) -> Result<TextElem, SvgTextError> {
    let bad = |what: String| SvgTextError { index, what };
    let gt = elem.find('>').ok_or_else(|| bad("no end of the opening tag".into()))?;
    let (tag, content) = (&elem[..gt], &elem[gt + 1..]);
    let attr = |name: &str| -> Option<&str> {
        let key = format!(" {name}=\"");
        let i = tag.find(&key)? + key.len();
        tag[i..].find('"').map(|j| &tag[i..i + j])
    };
    let num = |name: &str| -> Result<f64, SvgTextError> {
        let v = attr(name).ok_or_else(|| bad(format!("no `{name}`")))?;
        v.parse::<f64>().map_err(|_| bad(format!("`{name}` is `{v}`, not a number")))
    };
    let h = match attr("text-anchor") {
        Some("start") | None => -1,
        Some("middle") => 0,
        Some("end") => 1,
        Some(o) => return Err(bad(format!("text-anchor `{o}`"))),
    };
    let v = match attr("dy") {
        Some("0.76em") => -1,
        Some("0.5ex") => 0,
        Some("-0.5ex") => 1,
        o => return Err(bad(format!("dy {o:?}"))),
    };
    let rotate = match attr("transform") {
        None => None,
        Some(t) => match t.strip_prefix("rotate(").and_then(|r| r.split(',').next()) {
            Some(angle) => Some(angle.to_string()),
            None => return Err(bad(format!("transform `{t}` is not a rotation"))),
        },
    };
    let mut paint = format!("fill=\"{}\"", attr("fill").unwrap_or("#000000"));
    if let Some(o) = attr("opacity") {
        let _ = write!(paint, " opacity=\"{o}\"");
    }
    Ok(TextElem {
        x: num("x")?,
        y: num("y")?,
        // The backend wrote size / 1.24 with the shortest round-trip float.
        size: (num("font-size")? * 1.24 * 1e6).round() / 1e6,
        bold: attr("font-weight") == Some("bold"),
        h,
        v,
        rotate,
        paint,
        // The backend puts the text on a line of its own.
        text: unescape(content.strip_prefix('\n').unwrap_or(content).trim_end_matches('\n')),
    })
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Write the element as a group of glyph uses (labelled with its text, for screen readers,
/// search and `drawn_texts`); record the glyphs it uses.
fn glyphs(e: &TextElem, out: &mut String, used: &mut BTreeSet<(bool, u16)>) {
    let scaled = faces()[e.bold as usize].as_scaled(e.size as f32);
    let (dx, dy) = anchor_offset(e);
    let k = scaled.h_scale_factor() as f64;
    let rot = e.rotate.as_deref().map(|r| format!(" rotate({r})")).unwrap_or_default();
    let _ = write!(
        out,
        "<g aria-label=\"{}\" {} transform=\"translate({} {}){rot} scale({k:.7} -{k:.7})\">",
        escape(&e.text),
        e.paint,
        e.x,
        e.y
    );
    let face = if e.bold { 'b' } else { 'r' };
    pen_walk(&scaled, &e.text, |c, pen| {
        let glyph = scaled.scaled_glyph(c);
        let id = glyph.id;
        if let Some(q) = scaled.outline_glyph(glyph) {
            let b = q.px_bounds();
            // The glyph's pixel box starts at the pen's whole pixel (x) and half the size plus
            // the box's top (y), truncated; its origin sits minus the box's corner from there.
            let ox = pen as i32 + dx - b.min.x as i32;
            let oy = (e.size as f32 / 2.0 + b.min.y) as i32 + dy - b.min.y as i32;
            let (ux, uy) = (ox as f64 / k, -oy as f64 / k);
            let _ = write!(out, "<use href=\"#{face}{}\" x=\"{ux:.1}\" y=\"{uy:.1}\"/>", id.0);
            used.insert((e.bold, id.0));
        }
    });
    out.push_str("</g>");
}

/// Walk `text` as it is set: `at(c, pen)` for each character at its pen position (the
/// advances before it, kerned against the character before); returns the whole width.
fn pen_walk<F: Font>(scaled: &impl ScaleFont<F>, text: &str, mut at: impl FnMut(char, f32)) -> f32 {
    let mut pen = 0f32;
    let mut prev: Option<GlyphId> = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            pen += scaled.kern(p, id);
        }
        at(c, pen);
        pen += scaled.h_advance(id);
        prev = Some(id);
    }
    pen
}

/// The shift from the anchor point to the top left of the text's box, as plotters measures
/// the box (`estimate_layout`: the advances' sum wide, the size over 1.24 high).
fn anchor_offset(e: &TextElem) -> (i32, i32) {
    let scaled = faces()[e.bold as usize].as_scaled(e.size as f32);
    let width = pen_walk(&scaled, &e.text, |_, _| {});
    let (w, h) = (width as i32, (e.size / 1.24) as i32);
    ([0, -w / 2, -w][(e.h + 1) as usize], [0, -h / 2, -h][(e.v + 1) as usize])
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// A text of an outlined SVG, as drawn: its string, its anchor point, whether it is turned,
/// and the box its glyphs' outlines occupy in pixels (x0, y0, x1, y1), turned with the text.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawnText {
    pub text: String,
    pub x: f64,
    pub y: f64,
    pub rotated: bool,
    pub bbox: (f64, f64, f64, f64),
}

/// Every text of an SVG that `outline_text` wrote, in drawing order (texts with no visible
/// glyph, such as a lone space, have an empty box at their anchor).
pub fn drawn_texts(svg: &str) -> Vec<DrawnText> {
    let mut out = Vec::new();
    for part in svg.split("<g aria-label=\"").skip(1) {
        let Some((label, rest)) = part.split_once('"') else { continue };
        let Some((tag, body)) = rest.split_once('>') else { continue };
        let body = body.split("</g>").next().unwrap_or("");
        let Some(t) = group_transform(tag) else { continue };
        out.push(DrawnText {
            text: unescape(label),
            x: t.0,
            y: t.1,
            rotated: t.2 != 0.0,
            bbox: group_box(body, t),
        });
    }
    out
}

/// (x, y, angle in degrees, scale) of a group's `translate(x y) [rotate(a)] scale(k -k)`.
fn group_transform(tag: &str) -> Option<(f64, f64, f64, f64)> {
    let t = tag.split("transform=\"").nth(1)?.split('"').next()?;
    let inner = |name: &str| t.split(&format!("{name}(")).nth(1)?.split(')').next();
    let mut xy = inner("translate")?.split(' ').map(|v| v.parse::<f64>().ok());
    let (x, y) = (xy.next()??, xy.next()??);
    let angle = inner("rotate").map_or(Some(0.0), |a| a.parse().ok())?;
    let k = inner("scale")?.split(' ').next()?.parse().ok()?;
    Some((x, y, angle, k))
}

/// The box of a group's glyph uses (see `DrawnText`), in canvas pixels.
fn group_box(body: &str, (x, y, angle, k): (f64, f64, f64, f64)) -> (f64, f64, f64, f64) {
    let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for u in body.split("<use ").skip(1) {
        let a = |name: &str| u.split(&format!("{name}=\"")).nth(1)?.split('"').next();
        let Some(href) = a("href").and_then(|h| h.strip_prefix('#')) else { continue };
        let bold = href.starts_with('b');
        let (Some(id), Some(ux), Some(uy)) = (
            href[1..].parse::<u16>().ok(),
            a("x").and_then(|v| v.parse::<f64>().ok()),
            a("y").and_then(|v| v.parse::<f64>().ok()),
        ) else {
            continue;
        };
        let face = &faces()[bold as usize];
        let Some(o) = face.outline(GlyphId(id)) else { continue };
        let b = o.bounds;
        // In the group's frame (before the turn): x right, y down, pixels.
        x0 = x0.min((ux + b.min.x as f64) * k);
        x1 = x1.max((ux + b.max.x as f64) * k);
        y0 = y0.min(-(uy + b.max.y as f64) * k);
        y1 = y1.max(-(uy + b.min.y as f64) * k);
    }
    if x0 > x1 {
        return (x, y, x, y);
    }
    // Turn by a multiple of 90 degrees, then move to the anchor.
    let (c, s) = (angle.to_radians().cos().round(), angle.to_radians().sin().round());
    let turn = |px: f64, py: f64| (x + c * px - s * py, y + s * px + c * py);
    let (a, b) = (turn(x0, y0), turn(x1, y1));
    (a.0.min(b.0), a.1.min(b.1), a.0.max(b.0), a.1.max(b.1))
}

/// `<path id=...>` of one glyph in font units (y up; the uses flip it).
fn write_glyph_def(out: &mut String, bold: bool, id: GlyphId) {
    let Some(outline) = faces()[bold as usize].outline(id) else { return };
    let face = if bold { 'b' } else { 'r' };
    let _ = write!(out, "<path id=\"{face}{}\" d=\"", id.0);
    let mut at = None;
    for curve in &outline.curves {
        let (start, end) = match *curve {
            OutlineCurve::Line(a, b)
            | OutlineCurve::Quad(a, _, b)
            | OutlineCurve::Cubic(a, _, _, b) => (a, b),
        };
        if at != Some(start) {
            if at.is_some() {
                out.push('Z');
            }
            let _ = write!(out, "M{} {}", start.x, start.y);
        }
        let _ = match *curve {
            OutlineCurve::Line(_, b) => write!(out, "L{} {}", b.x, b.y),
            OutlineCurve::Quad(_, c, b) => write!(out, "Q{} {} {} {}", c.x, c.y, b.x, b.y),
            OutlineCurve::Cubic(_, c, d, b) => {
                write!(out, "C{} {} {} {} {} {}", c.x, c.y, d.x, d.y, b.x, b.y)
            }
        };
        at = Some(end);
    }
    out.push_str("Z\"/>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_becomes_glyph_uses_with_one_definition_per_glyph() {
        let svg = "<svg width=\"10\" height=\"10\" xmlns=\"http://www.w3.org/2000/svg\">\
            <text x=\"5\" y=\"5\" dy=\"0.76em\" text-anchor=\"middle\" font-family=\"sans-serif\" \
            font-size=\"20.161290322580644\" opacity=\"1\" fill=\"#282828\">\na &amp; a\n</text>\n</svg>";
        let out = outline_text(svg).unwrap();
        assert!(!out.contains("<text"), "{out}");
        assert!(!out.contains("sans-serif"), "{out}");
        assert_eq!(out.matches("<path id=").count(), 2, "`a` and `&` once each: {out}");
        assert_eq!(out.matches("<use ").count(), 3, "the space has no outline: {out}");
    }
}
