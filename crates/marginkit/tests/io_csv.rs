//! CSV reader: header detection, label choice, delimiters, quotes, limits and hostile inputs.

use marginkit::data::csv::{
    read_csv, read_csv_bytes, read_csv_path, CsvOptions, Delimiter, Header, LabelColumn,
};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::{Features, IoError, ParseError, ParseErrorKind};

/// A hostile input, the options, the expected 1-based line and column, and a check of the kind.
type Case = (
    &'static [u8],
    CsvOptions,
    usize,
    usize,
    fn(&ParseErrorKind) -> bool,
);

fn opts(label: LabelColumn) -> CsvOptions {
    CsvOptions {
        label,
        ..CsvOptions::default()
    }
}

fn parse_err(input: &[u8], o: &CsvOptions) -> ParseError {
    match read_csv_bytes(input, o) {
        Err(IoError::Parse(p)) => p,
        other => panic!("expected a parse error for {input:?}, got {other:?}"),
    }
}

fn rows(ds: &marginkit::Dataset) -> Vec<Vec<f64>> {
    (0..ds.len())
        .map(|i| (0..ds.n_features()).map(|k| ds.x.row(i).get(k)).collect())
        .collect()
}

#[test]
fn header_auto_detected_label_last_by_default() {
    let ds = read_csv_bytes(b"a,b,y\n1,2,1\n3,4.5,-1\n", &CsvOptions::default()).unwrap();
    assert!(matches!(ds.x, Features::Dense(_)));
    assert_eq!(ds.y, vec![1.0, -1.0]);
    assert_eq!(rows(&ds), vec![vec![1.0, 2.0], vec![3.0, 4.5]]);
    // Without a header the first line is data.
    let ds = read_csv_bytes(b"1,2,1\n3,4.5,-1\n", &CsvOptions::default()).unwrap();
    assert_eq!(ds.len(), 2);
}

#[test]
fn label_first_index_and_name() {
    let text = b"y,a,b\n1,2,3\n-1,5,6\n";
    let ds = read_csv_bytes(text, &opts(LabelColumn::First)).unwrap();
    assert_eq!(ds.y, vec![1.0, -1.0]);
    assert_eq!(rows(&ds), vec![vec![2.0, 3.0], vec![5.0, 6.0]]);
    let ds = read_csv_bytes(text, &opts(LabelColumn::Index(1))).unwrap();
    assert_eq!(ds.y, vec![2.0, 5.0]);
    assert_eq!(rows(&ds), vec![vec![1.0, 3.0], vec![-1.0, 6.0]]);
    let ds = read_csv_bytes(text, &opts(LabelColumn::Name("b".into()))).unwrap();
    assert_eq!(ds.y, vec![3.0, 6.0]);
}

#[test]
fn delimiters_quotes_bom_crlf_blank_lines_spaces() {
    let o = CsvOptions {
        delimiter: Delimiter::Semicolon,
        label: LabelColumn::Name("the \"label\"; y".into()),
        ..CsvOptions::default()
    };
    let text = "\u{feff}\"x 1\" ; \"the \"\"label\"\"; y\"\r\n\r\n 1.5 ; \"2\"\r\n  \r\n-3;4\r\n";
    let ds = read_csv_bytes(text.as_bytes(), &o).unwrap();
    assert_eq!(ds.y, vec![2.0, 4.0]);
    assert_eq!(rows(&ds), vec![vec![1.5], vec![-3.0]]);
    let o = CsvOptions {
        delimiter: Delimiter::Tab,
        ..CsvOptions::default()
    };
    let ds = read_csv_bytes(b"1\t 2\t3\n4\t5\t6\n", &o).unwrap();
    assert_eq!(ds.y, vec![3.0, 6.0]);
    assert_eq!(rows(&ds), vec![vec![1.0, 2.0], vec![4.0, 5.0]]);
}

#[test]
fn header_forced_present_or_absent() {
    let o = CsvOptions {
        header: Header::Present,
        ..CsvOptions::default()
    };
    let ds = read_csv_bytes(b"1,2\n3,4\n", &o).unwrap();
    assert_eq!(ds.y, vec![4.0]);
    let o = CsvOptions {
        header: Header::Absent,
        ..CsvOptions::default()
    };
    let e = parse_err(b"a,b\n3,4\n", &o);
    assert_eq!((e.line, e.column), (1, 1));
    assert!(matches!(e.kind, ParseErrorKind::Expected { .. }));
}

#[test]
fn same_values_as_the_libsvm_file() {
    // heart_scale converted to CSV (dense, label first) reads to the same data set.
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let ds = read_libsvm_path(dir.join("heart_scale"), &ReadOptions::default()).unwrap();
    let mut csv = String::from("label");
    for k in 1..=ds.n_features() {
        csv.push_str(&format!(",f{k}"));
    }
    csv.push('\n');
    for i in 0..ds.len() {
        csv.push_str(&ds.y[i].to_string());
        for k in 0..ds.n_features() {
            csv.push_str(&format!(",{}", ds.x.row(i).get(k)));
        }
        csv.push('\n');
    }
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("heart.csv");
    std::fs::write(&p, csv).unwrap();
    let back = read_csv_path(&p, &opts(LabelColumn::First)).unwrap();
    assert_eq!(back, ds);
}

#[test]
fn hostile_inputs_give_the_right_variant_and_position() {
    use ParseErrorKind as K;
    let d = CsvOptions::default();
    let cases: Vec<Case> = vec![
        (b"1,2,3\n4,5\n", d.clone(), 2, 4, |k| {
            *k == K::FieldCount {
                expected: 3,
                found: 2,
            }
        }),
        (b"1,2\n4,5,6\n", d.clone(), 2, 5, |k| {
            *k == K::FieldCount {
                expected: 2,
                found: 3,
            }
        }),
        (b"a,b\n1,2\n3,x\n", d.clone(), 3, 3, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"1,2\n3,\n", d.clone(), 2, 3, |k| {
            matches!(k, K::Expected { .. })
        }),
        // "1" and "nan" both parse as numbers: no header is detected, then NaN is rejected.
        (b"1,nan\n", d.clone(), 1, 3, |k| {
            *k == K::NonFinite { what: "label" }
        }),
        (b"a,b\n1,nan\n", d.clone(), 2, 3, |k| {
            *k == K::NonFinite { what: "label" }
        }),
        (b"a,b\ninf,1\n", d.clone(), 2, 1, |k| {
            *k == K::NonFinite {
                what: "feature value",
            }
        }),
        (b"a,b\n\"1,2\n", d.clone(), 2, 1, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"a,b\n\"1\"x,2\n", d.clone(), 2, 4, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"1,2\n", opts(LabelColumn::Name("y".into())), 1, 1, |k| {
            matches!(k, K::Expected { .. })
        }),
        (
            b"a,b\n1,2\n",
            opts(LabelColumn::Name("y".into())),
            1,
            1,
            |k| matches!(k, K::Expected { .. }),
        ),
        (b"1,2\n", opts(LabelColumn::Index(2)), 1, 4, |k| {
            *k == K::FieldCount {
                expected: 3,
                found: 2,
            }
        }),
        (b"", d.clone(), 1, 1, |k| *k == K::Empty),
        (b"a,b,y\n\n", d.clone(), 3, 1, |k| *k == K::Empty),
        (
            b"1,2\n1,2,3,4\n",
            CsvOptions {
                max_fields: 3,
                ..d.clone()
            },
            2,
            7,
            |k| {
                *k == K::Limit {
                    what: "fields per line",
                    limit: 3,
                }
            },
        ),
        (
            b"1,2\n10,20\n",
            CsvOptions {
                max_line_len: 4,
                ..d.clone()
            },
            2,
            5,
            |k| matches!(k, K::Limit { limit: 4, .. }),
        ),
    ];
    for (input, o, line, column, check) in cases {
        let text = String::from_utf8_lossy(input).into_owned();
        let e = parse_err(input, &o);
        assert_eq!((e.line, e.column), (line, column), "{text:?}: {e:?}");
        assert!(check(&e.kind), "{text:?}: {e:?}");
    }
}

#[test]
fn reader_from_bufread_and_gzip() {
    let text = b"a,y\n1,2\n";
    let ds = read_csv(&text[..], &CsvOptions::default()).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, text).unwrap();
    let gz = enc.finish().unwrap();
    assert_eq!(read_csv_bytes(&gz, &CsvOptions::default()).unwrap(), ds);
}
