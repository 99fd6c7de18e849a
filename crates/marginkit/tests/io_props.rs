//! Property tests: the three parsers never panic on arbitrary or mutated input, and written data
//! sets and scaling parameters read back to what was written.

use proptest::prelude::*;

use marginkit::data::csv::{read_csv_bytes, CsvOptions, Delimiter, Header, LabelColumn};
use marginkit::data::libsvm_fmt::{
    read_libsvm_bytes, write_libsvm, Indexing, ReadOptions, Storage,
};
use marginkit::data::scale::{ScaleParams, ScaleReadOptions};
use marginkit::{CsrMatrix, Dataset, Features};

const HEART: &[u8] = include_bytes!("data/heart_scale");

fn small_limits(indexing: Indexing) -> ReadOptions {
    ReadOptions {
        indexing,
        max_line_len: 64,
        max_feature_index: 1000,
        ..ReadOptions::default()
    }
}

/// Checks the invariants a successfully read data set must satisfy.
fn check_dataset(ds: &Dataset) {
    assert_eq!(ds.y.len(), ds.x.n_rows());
    assert!(ds.y.iter().all(|v| v.is_finite()));
    for i in 0..ds.len() {
        for (k, v) in ds.x.row(i).iter() {
            assert!(k < ds.n_features());
            assert!(v.is_finite());
        }
    }
}

/// A finite f64 drawn from all bit patterns, plus the usual suspects.
fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>()
            .prop_map(f64::from_bits)
            .prop_filter("finite", |v| v.is_finite()),
        Just(0.0),
        Just(-0.0),
        Just(1.0),
        Just(-1.0),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(f64::MAX),
        -1e3..1e3f64,
    ]
}

fn sparse_dataset() -> impl Strategy<Value = Dataset> {
    (1usize..12, 1usize..8).prop_flat_map(|(n, d)| {
        (
            prop::collection::vec(
                prop::collection::vec(prop::option::weighted(0.6, finite()), d),
                n,
            ),
            prop::collection::vec(finite(), n),
        )
            .prop_map(move |(cells, y)| {
                let mut indptr = vec![0];
                let mut indices = Vec::new();
                let mut values = Vec::new();
                for row in &cells {
                    for (k, v) in row.iter().enumerate() {
                        if let Some(v) = v {
                            indices.push(k as u32);
                            values.push(*v);
                        }
                    }
                    indptr.push(indices.len());
                }
                let m = CsrMatrix::new(d, indptr, indices, values).unwrap();
                Dataset::new(Features::Sparse(m), y, None).unwrap()
            })
    })
}

fn same_values(a: &Dataset, b: &Dataset) -> bool {
    a.len() == b.len()
        && a.n_features() == b.n_features()
        && a.y == b.y
        && (0..a.len()).all(|i| (0..a.n_features()).all(|k| a.x.row(i).get(k) == b.x.row(i).get(k)))
}

/// Lines built from plausible and broken tokens, to get deep into the LIBSVM parser.
fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just("1".to_string()),
        Just("-1".to_string()),
        Just("+1".to_string()),
        Just("qid:7".to_string()),
        Just("#c".to_string()),
        Just(":".to_string()),
        Just("nan".to_string()),
        Just("\t".to_string()),
        Just("\r\n".to_string()),
        Just("\n".to_string()),
        (0u64..20, finite()).prop_map(|(i, v)| format!("{i}:{v}")),
        (0u64..20).prop_map(|i| format!("{i}:")),
        "[0-9a-z:.+-]{0,6}",
    ];
    prop::collection::vec(token, 0..40).prop_map(|t| t.join(" ").into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn libsvm_reader_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for o in [ReadOptions::default(), small_limits(Indexing::OneBased), small_limits(Indexing::Precomputed)] {
            if let Ok(ds) = read_libsvm_bytes(&bytes, &o) {
                check_dataset(&ds);
            }
        }
        // The same bytes behind a gzip magic number must not panic the decoder path either.
        let mut gz = vec![0x1f, 0x8b];
        gz.extend_from_slice(&bytes);
        let _ = read_libsvm_bytes(&gz, &ReadOptions::default());
    }

    #[test]
    fn libsvm_reader_on_token_soup(bytes in token_soup()) {
        for o in [ReadOptions { storage: Storage::Sparse, ..ReadOptions::default() }, ReadOptions::precomputed()] {
            if let Ok(ds) = read_libsvm_bytes(&bytes, &o) {
                check_dataset(&ds);
                if o.indexing == Indexing::OneBased {
                    let mut out = Vec::new();
                    write_libsvm(&mut out, &ds).unwrap();
                    let back = read_libsvm_bytes(&out, &o).unwrap();
                    prop_assert_eq!(back, ds);
                }
            }
        }
    }

    #[test]
    fn libsvm_reader_on_mutated_heart_scale(
        start in 0usize..HEART.len() - 600,
        edits in prop::collection::vec((0usize..600, any::<u8>()), 1..6),
    ) {
        let mut bytes = HEART[start..start + 600].to_vec();
        for (p, b) in edits {
            bytes[p] = b;
        }
        if let Ok(ds) = read_libsvm_bytes(&bytes, &ReadOptions::default()) {
            check_dataset(&ds);
        }
    }

    #[test]
    fn write_then_read_round_trips(ds in sparse_dataset()) {
        let mut out = Vec::new();
        write_libsvm(&mut out, &ds).unwrap();
        let sparse = ReadOptions { storage: Storage::Sparse, ..ReadOptions::default() };
        let back = read_libsvm_bytes(&out, &sparse).unwrap();
        prop_assert!(same_values(&ds, &back), "{}", String::from_utf8_lossy(&out));
        let dense = read_libsvm_bytes(&out, &ReadOptions::default()).unwrap();
        prop_assert!(same_values(&ds, &dense));
    }

    #[test]
    fn csv_reader_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        delim in 0usize..3,
        header in 0usize..3,
        label in 0usize..4,
    ) {
        let o = CsvOptions {
            delimiter: [Delimiter::Comma, Delimiter::Semicolon, Delimiter::Tab][delim],
            header: [Header::Auto, Header::Present, Header::Absent][header],
            label: [LabelColumn::First, LabelColumn::Last, LabelColumn::Index(2), LabelColumn::Name("a".into())][label].clone(),
            max_line_len: 128,
            max_fields: 16,
        };
        if let Ok(ds) = read_csv_bytes(&bytes, &o) {
            check_dataset(&ds);
        }
    }

    #[test]
    fn csv_reader_on_field_soup(
        fields in prop::collection::vec(prop_oneof![
            Just(",".to_string()), Just("\n".to_string()), Just("\"".to_string()), Just("\"\"".to_string()),
            Just(" ".to_string()), Just("a".to_string()), finite().prop_map(|v| v.to_string()),
        ], 0..60),
    ) {
        let bytes = fields.concat().into_bytes();
        if let Ok(ds) = read_csv_bytes(&bytes, &CsvOptions::default()) {
            check_dataset(&ds);
        }
    }

    #[test]
    fn csv_numeric_tables_read_back(rows in prop::collection::vec(prop::collection::vec(finite(), 3), 1..10)) {
        let mut text = String::from("f1,f2,label\n");
        for r in &rows {
            text.push_str(&format!("{},{},{}\n", r[0], r[1], r[2]));
        }
        let ds = read_csv_bytes(text.as_bytes(), &CsvOptions::default()).unwrap();
        prop_assert_eq!(ds.len(), rows.len());
        for (i, r) in rows.iter().enumerate() {
            prop_assert_eq!(ds.y[i], r[2]);
            prop_assert_eq!(ds.x.row(i).get(0), r[0]);
            prop_assert_eq!(ds.x.row(i).get(1), r[1]);
        }
    }

    #[test]
    fn scale_params_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = ScaleParams::read(&bytes[..]);
        let _ = ScaleParams::read_with(&bytes[..], &ScaleReadOptions { max_line_len: 16, max_feature_index: 9 });
    }

    #[test]
    fn scale_params_reader_on_line_soup(
        lines in prop::collection::vec(prop_oneof![
            Just("x".to_string()), Just("y".to_string()), Just("".to_string()),
            (finite(), finite()).prop_map(|(a, b)| format!("{a} {b}")),
            (0u64..6, finite(), finite()).prop_map(|(i, a, b)| format!("{i} {a} {b}")),
            (0u64..6, -2.0..2.0f64).prop_map(|(i, a)| format!("{i} {a} {}", a + 1.0)),
        ], 0..12),
        data in sparse_dataset(),
    ) {
        if let Ok(p) = ScaleParams::read(lines.join("\n").as_bytes()) {
            // Whatever was accepted can be written and applied without panicking.
            let mut out = Vec::new();
            p.write_exact(&mut out).unwrap();
            prop_assert_eq!(ScaleParams::read(&out[..]).unwrap(), p.clone());
            if let Ok(s) = p.apply(&data) {
                check_dataset(&s);
            }
        }
    }

    #[test]
    fn scale_fit_write_read_apply(ds in sparse_dataset(), y in any::<bool>()) {
        let Ok(p) = ScaleParams::fit(&ds, -1.0, 1.0, y.then_some((0.0, 1.0))) else {
            return Ok(());
        };
        let mut out = Vec::new();
        p.write_exact(&mut out).unwrap();
        prop_assert_eq!(&ScaleParams::read(&out[..]).unwrap(), &p);
        // Sparse and dense inputs scale to the same values (or fail alike on overflow).
        let dense = Dataset::new(ds.x.clone().densify_if(0.0, usize::MAX), ds.y.clone(), None).unwrap();
        match (p.apply(&ds), p.apply(&dense)) {
            (Ok(a), Ok(b)) => {
                prop_assert!(same_values(&a, &b));
                check_dataset(&a);
                // Fitted on the same data, feature values land in [lower, upper] (up to rounding).
                for i in 0..a.len() {
                    for (_, v) in a.x.row(i).iter() {
                        prop_assert!((-1.0 - 1e-12..=1.0 + 1e-12).contains(&v), "{}", v);
                    }
                }
            }
            (Err(e1), Err(e2)) => prop_assert_eq!(e1, e2),
            (a, b) => prop_assert!(false, "sparse {:?} vs dense {:?}", a.is_ok(), b.is_ok()),
        }
    }
}
