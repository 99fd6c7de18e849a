//! Fuzzes the in-memory CSV reader under every delimiter / header / label mode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marginkit::data::csv::{read_csv_bytes, CsvOptions, Delimiter, Header, LabelColumn};

fuzz_target!(|data: &[u8]| {
    let (mode, input) = match data.split_first() {
        Some((m, rest)) => (*m, rest),
        None => (0, data),
    };
    let opts = CsvOptions {
        delimiter: [Delimiter::Comma, Delimiter::Semicolon, Delimiter::Tab][usize::from(mode % 3)],
        header: [Header::Auto, Header::Present, Header::Absent][usize::from((mode / 3) % 3)],
        label: match (mode / 9) % 4 {
            0 => LabelColumn::Last,
            1 => LabelColumn::First,
            2 => LabelColumn::Index(1),
            _ => LabelColumn::Name("label".into()),
        },
        max_line_len: 1 << 16,
        max_fields: 1 << 10,
    };
    if let Ok(ds) = read_csv_bytes(input, &opts) {
        assert_eq!(ds.y.len(), ds.x.n_rows());
    }
});
