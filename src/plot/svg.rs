//! SVG figures with real `<text>`: plotters' SVG backend, each text set where plotters' bitmap
//! backend draws it, so an SVG reads (and is searched, selected, read aloud) as text and looks
//! like its PNG wherever DejaVu Sans (or the metric-alike Verdana) is installed.
//!
//! The two backends of plotters disagree on text. The bitmap one scales the font so ascent
//! minus descent is the size given and puts the baseline half the size below the top of a box
//! the size over 1.24 high, anchored as asked. The SVG one writes `font-size` as the size over
//! 1.24 and the baseline 0.76 em below a top anchor (0.5 ex above a centre one): smaller text,
//! lower. `TextSvg` hands the SVG backend each text with the bitmap's em and a top anchor
//! moved so that the SVG's baseline is the bitmap's. Everything else passes through as it is.

use plotters::prelude::SVGBackend;
use plotters_backend::text_anchor::{Pos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontFamily, FontStyle, FontTransform,
};

/// DejaVu Sans's ascent minus descent in em (hhea: 1901 + 483 units of 2048): the bitmap
/// backend's size over its em.
pub const SIZE_PER_EM: f64 = 2384.0 / 2048.0;

/// plotters' SVG backend, its text placed and sized as the bitmap backend draws it.
pub struct TextSvg<'a>(pub SVGBackend<'a>);

type Drawn<E> = Result<(), DrawingErrorKind<E>>;
type SvgError = <SVGBackend<'static> as DrawingBackend>::ErrorType;

/// Backend methods passed on to the SVG backend as they are (all but the text's).
macro_rules! pass_on {
    ($(fn $name:ident<$($g:ident: $b:path),*>($($arg:ident: $ty:ty),*);)*) => {$(
        fn $name<$($g: $b),*>(&mut self, $($arg: $ty),*) -> Drawn<SvgError> {
            self.0.$name($($arg),*)
        }
    )*};
}

impl DrawingBackend for TextSvg<'_> {
    type ErrorType = SvgError;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }
    pass_on! {
        fn ensure_prepared<>();
        fn present<>();
        fn draw_pixel<>(at: BackendCoord, color: BackendColor);
        fn draw_line<S: BackendStyle>(from: BackendCoord, to: BackendCoord, style: &S);
        fn draw_rect<S: BackendStyle>(a: BackendCoord, b: BackendCoord, style: &S, fill: bool);
        fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(path: I, style: &S);
        fn draw_circle<S: BackendStyle>(c: BackendCoord, r: u32, style: &S, fill: bool);
        fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(vert: I, style: &S);
    }

    /// The bitmap's text box is `layout_box` high, its top at the anchor less none, half or
    /// all of that height; its baseline half the size below that top. The SVG's baseline is
    /// 0.76 em below the point given with a top anchor (in the text's turned frame: the turn
    /// is about that point).
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        (x, y): BackendCoord,
    ) -> Drawn<SvgError> {
        let size = style.size();
        let ((_, y0), (_, y1)) =
            style.layout_box(text).map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let top = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -(y1 - y0) / 2,
            VPos::Bottom => -(y1 - y0),
        };
        let em = size / SIZE_PER_EM;
        let down = (f64::from(top) + size / 2.0 - 0.76 * em).round() as i32;
        let (dx, dy) = style.transform().transform(0, down);
        self.0.draw_text(&edge_spaces_kept(text), &AtTop { style, em }, (x + dx, y + dy))
    }
}

/// `text` with its leading and trailing spaces made no-break spaces (as wide, in DejaVu Sans):
/// a viewer drops a text element's edge spaces (SVG's default white space handling), and a
/// label such as tune's ` 4 s` is kept off its line by them.
fn edge_spaces_kept(text: &str) -> String {
    let body = text.trim_matches(' ');
    if body.is_empty() || body.len() == text.len() {
        return text.to_string();
    }
    let lead = text.len() - text.trim_start_matches(' ').len();
    let trail = text.len() - text.trim_end_matches(' ').len();
    format!("{}{body}{}", "\u{a0}".repeat(lead), "\u{a0}".repeat(trail))
}

/// A text style as given, but anchored at the top and `em` pixels to the em (plotters' SVG
/// backend writes `font-size` as the size over 1.24).
struct AtTop<'s, S> {
    style: &'s S,
    em: f64,
}

impl<S: BackendTextStyle> BackendTextStyle for AtTop<'_, S> {
    type FontError = S::FontError;

    fn color(&self) -> BackendColor {
        self.style.color()
    }
    fn size(&self) -> f64 {
        self.em * 1.24
    }
    fn transform(&self) -> FontTransform {
        self.style.transform()
    }
    fn style(&self) -> FontStyle {
        self.style.style()
    }
    fn anchor(&self) -> Pos {
        Pos::new(self.style.anchor().h_pos, VPos::Top)
    }
    fn family(&self) -> FontFamily<'_> {
        self.style.family()
    }
    fn layout_box(&self, text: &str) -> Result<((i32, i32), (i32, i32)), Self::FontError> {
        self.style.layout_box(text)
    }
    fn draw<E, F: FnMut(i32, i32, BackendColor) -> Result<(), E>>(
        &self,
        text: &str,
        pos: BackendCoord,
        draw: F,
    ) -> Result<Result<(), E>, Self::FontError> {
        self.style.draw(text, pos, draw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::style;
    use plotters::prelude::*;
    use plotters::style::text_anchor::HPos;

    /// A text of size 25 at (100, 200) as `TextSvg` writes it: its attributes.
    fn drawn(v: VPos, turn: FontTransform) -> impl Fn(&str) -> String {
        style::register_fonts();
        let mut doc = String::new();
        {
            let root = TextSvg(SVGBackend::with_string(&mut doc, (400, 400))).into_drawing_area();
            let font = (style::FONT, 25).into_font().transform(turn);
            let text =
                Text::new(" a ", (100, 200), font.color(&BLACK).pos(Pos::new(HPos::Center, v)));
            root.draw(&text).unwrap();
        }
        assert!(doc.contains(">\n\u{a0}a\u{a0}\n</text>"), "edge spaces kept: {doc}");
        move |name| {
            let at = doc.split(&format!(" {name}=\"")).nth(1).unwrap_or_else(|| panic!("{name}"));
            at.split('"').next().unwrap().to_string()
        }
    }

    #[test]
    fn text_sits_on_the_bitmaps_baseline_at_the_bitmaps_em() {
        // plotters' box is 25 / 1.24 = 20 px high; the baseline half the size below its top.
        for (v, top) in [(VPos::Top, 0.0), (VPos::Center, -10.0), (VPos::Bottom, -20.0)] {
            let attr = drawn(v, FontTransform::None);
            let em: f64 = attr("font-size").parse().unwrap();
            assert!((em - 25.0 / SIZE_PER_EM).abs() < 1e-9, "{em}");
            assert_eq!(
                (attr("dy"), attr("text-anchor"), attr("x")),
                ("0.76em".into(), "middle".into(), "100".into())
            );
            let baseline = attr("y").parse::<f64>().unwrap() + 0.76 * em;
            assert!((baseline - (200.0 + top + 12.5)).abs() <= 0.5, "{baseline}");
        }
        // Turned a quarter anticlockwise about its anchor: the baseline is to the anchor's right.
        let attr = drawn(VPos::Top, FontTransform::Rotate270);
        let em: f64 = attr("font-size").parse().unwrap();
        let x: f64 = attr("x").parse().unwrap();
        assert!((x + 0.76 * em - 112.5).abs() <= 0.5 && attr("y") == "200", "{x}");
        assert_eq!(attr("transform"), format!("rotate(270, {x}, 200)"));
    }
}
