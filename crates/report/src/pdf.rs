//! A plotters backend that writes PDF (through `pdf-writer`), so every chart
//! is drawn once by the same code into an SVG for the page and a PDF a
//! paper can `\includegraphics` as is. Text is the base-14 Helvetica (no
//! font file to embed), measured with its standard metrics; the output has
//! no timestamps, so the same chart gives the same bytes.

use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, Str};
use plotters::prelude::*;
use plotters_backend::{
    text_anchor::{HPos, VPos},
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontTransform,
};

/// Helvetica advance widths (per 1000 units of font size) of ASCII 32..=126.
const HELVETICA: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278,
    278, // ' '..'/'
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584,
    556, // '0'..'?'
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722,
    778, // '@'..'O'
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469,
    556, // 'P'..'_'
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556,
    556, // '`'..'o'
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, // 'p'..'~'
];

/// A character in WinAnsiEncoding (what a base-14 font can show), with
/// its Helvetica width. Characters outside it become a close ASCII stand-in.
fn win_ansi(c: char) -> (Vec<u8>, u16) {
    let w = |b: u8| {
        HELVETICA
            .get((b as usize).wrapping_sub(32))
            .copied()
            .unwrap_or(556)
    };
    match c {
        ' '..='~' => (vec![c as u8], w(c as u8)),
        '·' => (vec![0xB7], 278),
        '–' => (vec![0x96], 556),
        '—' => (vec![0x97], 1000),
        '×' => (vec![0xD7], 584),
        '±' => (vec![0xB1], 584),
        'é' => (vec![0xE9], 556),
        '→' => (b"->".to_vec(), w(b'-') + w(b'>')),
        '−' => (vec![b'-'], w(b'-')),
        _ => (vec![b'?'], w(b'?')),
    }
}

/// The encoded bytes of `text` and its width at font size 1.
fn encode(text: &str) -> (Vec<u8>, f64) {
    let mut bytes = Vec::with_capacity(text.len());
    let mut width = 0u32;
    for c in text.chars() {
        let (b, w) = win_ansi(c);
        bytes.extend(b);
        width += w as u32;
    }
    (bytes, width as f64 / 1000.0)
}

/// plotters' SVG backend writes a font of size `s` as `s / 1.24` px; the
/// PDF draws it the same size, so the two look alike.
const SVG_SCALE: f64 = 1.24;

/// Never fails: everything is drawn into memory.
#[derive(Debug)]
pub struct NoError;

impl std::fmt::Display for NoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pdf backend")
    }
}

impl std::error::Error for NoError {}

type R = Result<(), DrawingErrorKind<NoError>>;

/// A one-page PDF being drawn. Coordinates are plotters' (pixels, y down);
/// one pixel is one point. [`DrawingBackend::present`] writes the document
/// into the buffer given at creation (as plotters' `SVGBackend::with_string`).
pub struct PdfBackend<'a> {
    size: (u32, u32),
    content: Content,
    out: &'a mut Vec<u8>,
}

impl<'a> PdfBackend<'a> {
    /// A page of `size` points, written into `out` when presented.
    pub fn with_buffer(out: &'a mut Vec<u8>, size: (u32, u32)) -> PdfBackend<'a> {
        PdfBackend {
            size,
            content: Content::new(),
            out,
        }
    }

    fn y(&self, y: f64) -> f32 {
        (self.size.1 as f64 - y) as f32
    }

    /// Set the fill and stroke colour; false when fully transparent (skip).
    fn paint(&mut self, c: BackendColor) -> bool {
        if c.alpha <= 0.0 {
            return false;
        }
        // No transparency groups: a translucent colour is mixed with white,
        // which is what it looks like on the white chart background.
        let mix = |v: u8| ((v as f64 * c.alpha + 255.0 * (1.0 - c.alpha)) / 255.0) as f32;
        let (r, g, b) = (mix(c.rgb.0), mix(c.rgb.1), mix(c.rgb.2));
        self.content.set_fill_rgb(r, g, b);
        self.content.set_stroke_rgb(r, g, b);
        true
    }

    /// Start a path at the first point and run lines through the rest;
    /// false (nothing traced) when there are no points.
    fn trace(&mut self, points: impl IntoIterator<Item = BackendCoord>) -> bool {
        let mut pts = points.into_iter();
        let Some(first) = pts.next() else {
            return false;
        };
        let y0 = self.y(first.1 as f64);
        self.content.move_to(first.0 as f32, y0);
        for p in pts {
            let y = self.y(p.1 as f64);
            self.content.line_to(p.0 as f32, y);
        }
        true
    }

    /// The PDF document of what is drawn so far.
    fn document(&mut self) -> Vec<u8> {
        let (w, h) = (self.size.0 as f32, self.size.1 as f32);
        let (catalog, tree, page, font, content) = (
            Ref::new(1),
            Ref::new(2),
            Ref::new(3),
            Ref::new(4),
            Ref::new(5),
        );
        let mut pdf = Pdf::new();
        pdf.catalog(catalog).pages(tree);
        pdf.pages(tree).kids([page]).count(1);
        let mut p = pdf.page(page);
        p.parent(tree)
            .media_box(Rect::new(0.0, 0.0, w, h))
            .contents(content);
        p.resources().fonts().pair(Name(b"F1"), font);
        p.finish();
        pdf.type1_font(font)
            .base_font(Name(b"Helvetica"))
            .encoding_predefined(Name(b"WinAnsiEncoding"));
        let data = std::mem::replace(&mut self.content, Content::new()).finish();
        pdf.stream(content, &data);
        pdf.finish()
    }
}

impl DrawingBackend for PdfBackend<'_> {
    type ErrorType = NoError;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> R {
        Ok(())
    }

    fn present(&mut self) -> R {
        *self.out = self.document();
        Ok(())
    }

    fn draw_pixel(&mut self, p: BackendCoord, c: BackendColor) -> R {
        if self.paint(c) {
            let y = self.y(p.1 as f64 + 1.0);
            self.content.rect(p.0 as f32, y, 1.0, 1.0).fill_nonzero();
        }
        Ok(())
    }

    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, s: &S) -> R {
        self.draw_path([from, to], s)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        ul: BackendCoord,
        br: BackendCoord,
        s: &S,
        fill: bool,
    ) -> R {
        if !self.paint(s.color()) {
            return Ok(());
        }
        let (x, y) = (ul.0 as f32, self.y(br.1 as f64));
        let (w, h) = ((br.0 - ul.0) as f32, (br.1 - ul.1) as f32);
        if fill {
            self.content.rect(x, y, w, h).fill_nonzero();
        } else {
            self.content
                .set_line_width(s.stroke_width().max(1) as f32)
                .rect(x, y, w, h)
                .stroke();
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        s: &S,
    ) -> R {
        if !self.paint(s.color()) {
            return Ok(());
        }
        self.content.set_line_width(s.stroke_width().max(1) as f32);
        if self.trace(path) {
            self.content.stroke();
        }
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        s: &S,
        fill: bool,
    ) -> R {
        if !self.paint(s.color()) {
            return Ok(());
        }
        // Four cubic Béziers (k = 4/3 (√2 − 1)).
        let (cx, cy, r) = (center.0 as f32, self.y(center.1 as f64), radius as f32);
        let k = 0.552_284_8 * r;
        let c = &mut self.content;
        c.move_to(cx + r, cy)
            .cubic_to(cx + r, cy + k, cx + k, cy + r, cx, cy + r)
            .cubic_to(cx - k, cy + r, cx - r, cy + k, cx - r, cy)
            .cubic_to(cx - r, cy - k, cx - k, cy - r, cx, cy - r)
            .cubic_to(cx + k, cy - r, cx + r, cy - k, cx + r, cy)
            .close_path();
        if fill {
            c.fill_nonzero();
        } else {
            c.set_line_width(s.stroke_width().max(1) as f32).stroke();
        }
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        s: &S,
    ) -> R {
        if !self.paint(s.color()) {
            return Ok(());
        }
        if self.trace(vert) {
            self.content.close_path().fill_nonzero();
        }
        Ok(())
    }

    fn draw_text<T: BackendTextStyle>(&mut self, text: &str, style: &T, pos: BackendCoord) -> R {
        if !self.paint(style.color()) {
            return Ok(());
        }
        let size = style.size() / SVG_SCALE;
        let (bytes, w1) = encode(text);
        let width = w1 * size;
        // Anchor offsets along the text's own axes (x along the baseline,
        // y down), then rotated with it. Helvetica: cap height 0.718, descender 0.207.
        let a = style.anchor();
        let dx = match a.h_pos {
            HPos::Left => 0.0,
            HPos::Center => -width / 2.0,
            HPos::Right => -width,
        };
        let dy = match a.v_pos {
            VPos::Top => 0.718 * size,
            VPos::Center => 0.359 * size,
            VPos::Bottom => -0.207 * size,
        };
        // Unit vectors of the text's x axis and "down" axis in page
        // coordinates (y down), per rotation.
        let ((ux, uy), (vx, vy)) = match style.transform() {
            FontTransform::Rotate90 => ((0.0, 1.0), (-1.0, 0.0)),
            FontTransform::Rotate180 => ((-1.0, 0.0), (0.0, -1.0)),
            FontTransform::Rotate270 => ((0.0, -1.0), (1.0, 0.0)),
            _ => ((1.0, 0.0), (0.0, 1.0)),
        };
        let x = pos.0 as f64 + dx * ux + dy * vx;
        let y = pos.1 as f64 + dx * uy + dy * vy;
        // PDF's y axis points up: flip the rotation's y components.
        let m = [
            ux as f32,
            -uy as f32,
            -vx as f32,
            vy as f32,
            x as f32,
            self.y(y),
        ];
        self.content
            .begin_text()
            .set_font(Name(b"F1"), size as f32)
            .set_text_matrix(m)
            .show(Str(&bytes))
            .end_text();
        Ok(())
    }

    fn estimate_text_size<T: BackendTextStyle>(
        &self,
        text: &str,
        style: &T,
    ) -> Result<(u32, u32), DrawingErrorKind<NoError>> {
        let (_, w1) = encode(text);
        let size = style.size() / SVG_SCALE;
        Ok(((w1 * size).ceil() as u32, (size * 0.93).ceil() as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_helvetica_and_unknown_characters_stand_in() {
        let (b, w) = encode("Acc · 61");
        assert_eq!(b, b"Acc \xB7 61");
        // A 667, c 500 x2, space 278 x2, middle dot 278, 6 556, 1 556.
        assert!((w - 3.613).abs() < 1e-9, "{w}");
        assert_eq!(encode("A→C").0, b"A->C");
        assert_eq!(encode("中").0, b"?");
    }

    #[test]
    fn a_chart_is_a_valid_deterministic_pdf_with_its_text() {
        let draw = || {
            let mut out = Vec::new();
            let root = PdfBackend::with_buffer(&mut out, (300, 200)).into_drawing_area();
            root.fill(&WHITE).unwrap();
            let mut c = ChartBuilder::on(&root)
                .caption("Accuracy", ("sans-serif", 16))
                .x_label_area_size(30)
                .y_label_area_size(40)
                .build_cartesian_2d(0f64..10f64, 0f64..100f64)
                .unwrap();
            c.configure_mesh().y_desc("acc (%)").draw().unwrap();
            c.draw_series([Circle::new((5.0, 50.0), 4, RED.filled())])
                .unwrap();
            drop(c);
            root.present().unwrap();
            drop(root);
            out
        };
        let (a, b) = (draw(), draw());
        assert_eq!(a, b, "same bytes");
        assert!(a.starts_with(b"%PDF-"));
        assert!(a.ends_with(b"%%EOF") || a.ends_with(b"%%EOF\n"));
        let text = String::from_utf8_lossy(&a);
        assert!(
            text.contains("/Helvetica") && text.contains("(Accuracy) Tj"),
            "{text}"
        );
        assert!(text.contains("/MediaBox [0 0 300 200]"));
    }
}
