//! LIBSVM/svmlight reader and writer: real files, round trips, svmlight extras, gzip, limits and
//! hostile inputs (matched on error variants and positions, never on message text).

use std::io::Write;
use std::path::PathBuf;

use marginkit::data::libsvm_fmt::{
    read_libsvm, read_libsvm_bytes, read_libsvm_path, write_libsvm, write_libsvm_with, FloatFormat,
    Indexing, ReadOptions, Storage, WriteOptions, DEFAULT_MAX_FEATURE_INDEX, DEFAULT_MAX_LINE_LEN,
    HARD_MAX_FEATURE_INDEX,
};
use marginkit::{DataError, Dataset, DenseMatrix, Features, IoError, ParseError, ParseErrorKind};

/// A hostile input, the expected 1-based line and column, and a check of the error kind.
type Case = (&'static [u8], usize, usize, fn(&ParseErrorKind) -> bool);

fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn sparse() -> ReadOptions {
    ReadOptions {
        storage: Storage::Sparse,
        ..ReadOptions::default()
    }
}

fn parse_err(input: &[u8], opts: &ReadOptions) -> ParseError {
    match read_libsvm_bytes(input, opts) {
        Err(IoError::Parse(p)) => p,
        other => panic!("expected a parse error for {input:?}, got {other:?}"),
    }
}

/// Independent oracle: a naive parse of a well-formed LIBSVM file into (label, [(col, value)]).
fn naive(text: &str) -> Vec<(f64, Vec<(usize, f64)>)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split_whitespace();
            let y: f64 = it.next().unwrap().parse().unwrap();
            let feats = it
                .map(|t| {
                    let (i, v) = t.split_once(':').unwrap();
                    (i.parse::<usize>().unwrap() - 1, v.parse::<f64>().unwrap())
                })
                .collect();
            (y, feats)
        })
        .collect()
}

fn assert_same_values(a: &Dataset, b: &Dataset) {
    assert_eq!(a.len(), b.len());
    assert_eq!(a.n_features(), b.n_features());
    assert_eq!(a.y, b.y);
    for i in 0..a.len() {
        for k in 0..a.n_features() {
            assert_eq!(a.x.row(i).get(k), b.x.row(i).get(k), "row {i} col {k}");
        }
    }
}

#[test]
fn heart_scale_matches_a_naive_parse() {
    let text = std::fs::read_to_string(data_path("heart_scale")).unwrap();
    let oracle = naive(&text);
    for opts in [ReadOptions::default(), sparse()] {
        let ds = read_libsvm_path(data_path("heart_scale"), &opts).unwrap();
        assert_eq!(ds.len(), 270);
        assert_eq!(ds.n_features(), 13);
        assert!(ds.weights.is_none());
        assert_eq!(ds.y.iter().filter(|&&v| v == 1.0).count(), 120);
        assert_eq!(ds.y.iter().filter(|&&v| v == -1.0).count(), 150);
        for (i, (y, feats)) in oracle.iter().enumerate() {
            assert_eq!(ds.y[i], *y);
            let row = ds.x.row(i);
            let mut dense = [0.0; 13];
            for &(k, v) in feats {
                dense[k] = v;
            }
            for (k, &v) in dense.iter().enumerate() {
                assert_eq!(row.get(k), v, "row {i} col {k}");
            }
        }
        match (&opts.storage, &ds.x) {
            (Storage::Sparse, Features::Sparse(m)) => {
                let nnz: usize = oracle.iter().map(|(_, f)| f.len()).sum();
                assert_eq!(m.nnz(), nnz);
            }
            // density 0.962 >= 0.25: the default storage is dense
            (Storage::Auto { .. }, Features::Dense(_)) => {}
            (s, x) => panic!("storage {s:?} gave {x:?}"),
        }
    }
}

#[test]
fn iris_multiclass_labels_in_file_order() {
    let ds = read_libsvm_path(data_path("iris.scale.svm"), &ReadOptions::default()).unwrap();
    assert_eq!((ds.len(), ds.n_features()), (150, 4));
    assert_eq!(ds.labels_in_order(), vec![0.0, 1.0, 2.0]);
}

#[test]
fn round_trip_heart_scale_sparse_and_dense() {
    for opts in [ReadOptions::default(), sparse()] {
        let ds = read_libsvm_path(data_path("heart_scale"), &opts).unwrap();
        let mut out = Vec::new();
        write_libsvm(&mut out, &ds).unwrap();
        let back = read_libsvm_bytes(&out, &opts).unwrap();
        assert_eq!(back, ds);
        // Writing again gives the same bytes.
        let mut out2 = Vec::new();
        write_libsvm(&mut out2, &back).unwrap();
        assert_eq!(out, out2);
    }
}

#[test]
fn writer_prints_labels_like_libsvm() {
    let ds = read_libsvm_path(data_path("heart_scale"), &ReadOptions::default()).unwrap();
    let mut out = Vec::new();
    write_libsvm(&mut out, &ds).unwrap();
    let text = String::from_utf8(out).unwrap();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("1 1:0.708333 2:1 3:1 4:-0.320755 "),
        "{first}"
    );
    assert!(!first.contains("11:"), "zeros are left out: {first}");
    assert!(text.lines().nth(1).unwrap().starts_with("-1 1:0.583333"));
}

#[test]
fn writer_keeps_feature_count_when_last_column_is_all_zero() {
    let x = Features::Dense(
        DenseMatrix::new(2, 5, vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.5, 0.0, 0.0, 0.0]).unwrap(),
    );
    let ds = Dataset::new(x, vec![3.0, -0.5], None).unwrap();
    let mut out = Vec::new();
    write_libsvm(&mut out, &ds).unwrap();
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        "3 1:1 5:0\n-0.5 2:2.5\n"
    );
    let back = read_libsvm_bytes(&out, &ReadOptions::default()).unwrap();
    assert_same_values(&ds, &back);
}

#[test]
fn writer_extreme_values_round_trip() {
    let vals = vec![
        1e-300,
        -4.9e-324,
        1.7976931348623157e308,
        0.1,
        -1e-5,
        123456789012345680.0,
    ];
    let n = vals.len();
    let x = Features::Dense(DenseMatrix::new(1, n, vals.clone()).unwrap());
    let ds = Dataset::new(x, vec![-2.0], None).unwrap();
    let mut out = Vec::new();
    write_libsvm(&mut out, &ds).unwrap();
    let back = read_libsvm_bytes(&out, &ReadOptions::default()).unwrap();
    assert_same_values(&ds, &back);
}

#[test]
fn writer_rejects_non_finite_and_supports_printf_g() {
    let x = Features::Dense(DenseMatrix::new(1, 1, vec![1.0]).unwrap());
    // Fields are public, so a NaN can be put in after validation: the writer must refuse it.
    let mut ds = Dataset::new(x, vec![1.0], None).unwrap();
    ds.y[0] = f64::NAN;
    assert!(matches!(
        write_libsvm(Vec::new(), &ds),
        Err(IoError::Data(DataError::NonFinite {
            what: "label",
            row: 0
        }))
    ));
    let x = Features::Dense(DenseMatrix::new(1, 2, vec![1.0 / 3.0, 1234567.0]).unwrap());
    let ds = Dataset::new(x, vec![1.0], None).unwrap();
    let mut out = Vec::new();
    let opts = WriteOptions {
        float: FloatFormat::Significant(6),
        ..WriteOptions::default()
    };
    write_libsvm_with(&mut out, &ds, &opts).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "1 1:0.333333 2:1.23457e+06\n"
    );
}

#[test]
fn svmlight_extras_qid_comments_crlf_tabs_plus_labels() {
    let text = b"# header comment\r\n+1 qid:3 1:0.5\t3:-2 # trailing comment 9:9\r\n\r\n   \n-1 qid:3 2:1e-3\n0.25\n";
    let ds = read_libsvm_bytes(text, &sparse()).unwrap();
    assert_eq!(ds.y, vec![1.0, -1.0, 0.25]);
    assert_eq!(ds.n_features(), 3);
    assert_eq!(ds.x.row(0).get(0), 0.5);
    assert_eq!(ds.x.row(0).get(2), -2.0);
    assert_eq!(ds.x.row(1).get(1), 1e-3);
    assert_eq!(ds.x.row(2).iter().count(), 0);
}

#[test]
fn explicit_zeros_count_for_width_but_are_not_stored() {
    let ds = read_libsvm_bytes(b"1 1:1 7:0\n", &sparse()).unwrap();
    assert_eq!(ds.n_features(), 7);
    match &ds.x {
        Features::Sparse(m) => assert_eq!(m.nnz(), 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn min_features_widens_and_storage_auto_stays_sparse_when_sparse() {
    let opts = ReadOptions {
        min_features: 50,
        ..ReadOptions::default()
    };
    let ds = read_libsvm_bytes(b"1 1:1 2:3\n-1 4:1\n", &opts).unwrap();
    assert_eq!(ds.n_features(), 50);
    assert!(matches!(ds.x, Features::Sparse(_)));
    // Dense enough but over the byte cap: stays sparse.
    let opts = ReadOptions {
        storage: Storage::Auto {
            min_density: 0.5,
            max_bytes: 8,
        },
        ..ReadOptions::default()
    };
    let ds = read_libsvm_bytes(b"1 1:1 2:3\n", &opts).unwrap();
    assert!(matches!(ds.x, Features::Sparse(_)));
}

#[test]
fn precomputed_rows_keep_index_zero_as_column_zero() {
    let text = b"1 0:1 1:4 2:6 3:1\n-1 0:2 1:6 2:18 3:0\n1 0:3 1:1 2:0 3:1\n";
    let ds = read_libsvm_bytes(text, &ReadOptions::precomputed()).unwrap();
    assert_eq!(ds.n_features(), 4);
    assert_eq!(ds.x.row(0).get(0), 1.0);
    assert_eq!(ds.x.row(1).get(0), 2.0);
    assert_eq!(ds.x.row(1).get(2), 18.0);
    assert_eq!(ds.x.row(2).get(3), 1.0);
    // Writing with the precomputed convention reproduces indices 0.. and reads back the same.
    let mut out = Vec::new();
    let w = WriteOptions {
        indexing: Indexing::Precomputed,
        ..WriteOptions::default()
    };
    write_libsvm_with(&mut out, &ds, &w).unwrap();
    assert!(out.starts_with(b"1 0:1 1:4 2:6 3:1\n"));
    let back = read_libsvm_bytes(&out, &ReadOptions::precomputed()).unwrap();
    assert_eq!(back, ds);
    // Without the option, index 0 is an error at its column.
    let e = parse_err(text, &ReadOptions::default());
    assert_eq!((e.line, e.column), (1, 3));
    assert_eq!(e.kind, ParseErrorKind::IndexTooSmall { index: 0, min: 1 });
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[test]
fn gzip_is_detected_by_magic_bytes_not_name() {
    let raw = std::fs::read(data_path("heart_scale")).unwrap();
    let plain = read_libsvm_bytes(&raw, &ReadOptions::default()).unwrap();
    let gz = gzip(&raw);
    assert_eq!(&gz[..2], &[0x1f, 0x8b]);
    assert_eq!(
        read_libsvm_bytes(&gz, &ReadOptions::default()).unwrap(),
        plain
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("heart.txt"); // no .gz extension on purpose
    std::fs::write(&p, &gz).unwrap();
    assert_eq!(
        read_libsvm_path(&p, &ReadOptions::default()).unwrap(),
        plain
    );
    // Concatenated gzip members (as `cat a.gz b.gz`) read as one stream.
    let half = raw.len() / 2;
    let cut = half + raw[half..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut two = gzip(&raw[..cut]);
    two.extend(gzip(&raw[cut..]));
    assert_eq!(
        read_libsvm_bytes(&two, &ReadOptions::default()).unwrap(),
        plain
    );
    // Corrupt gzip: an I/O error, not a panic.
    let mut bad = gz.clone();
    bad.truncate(gz.len() / 2);
    assert!(read_libsvm_bytes(&bad, &ReadOptions::default()).is_err());
}

#[test]
fn missing_file_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        read_libsvm_path(dir.path().join("nope"), &ReadOptions::default()),
        Err(IoError::Io(_))
    ));
}

#[test]
fn hostile_inputs_give_the_right_variant_and_position() {
    use ParseErrorKind as K;
    let d = ReadOptions::default();
    let cases: Vec<Case> = vec![
        (b"1 1:2 x\n", 1, 7, |k| matches!(k, K::Expected { .. })),
        (b"1 a:2\n", 1, 3, |k| matches!(k, K::Expected { .. })),
        (b"1 :2\n", 1, 3, |k| matches!(k, K::Expected { .. })),
        (b"1 1:abc\n", 1, 5, |k| matches!(k, K::Expected { .. })),
        (b"1 1:\n", 1, 5, |k| matches!(k, K::Expected { .. })),
        (b"1 1:2:3\n", 1, 5, |k| matches!(k, K::Expected { .. })),
        (b"1 1:\xff\n", 1, 5, |k| matches!(k, K::Expected { .. })),
        (b"abc 1:2\n", 1, 1, |k| matches!(k, K::Expected { .. })),
        (b"1:2 2:3\n", 1, 1, |k| matches!(k, K::Expected { .. })),
        (b"1 qid:x 1:2\n", 1, 7, |k| matches!(k, K::Expected { .. })),
        (b"1 1:2 qid:3\n", 1, 7, |k| matches!(k, K::Expected { .. })),
        (b"nan 1:2\n", 1, 1, |k| *k == K::NonFinite { what: "label" }),
        (b"-inf\n", 1, 1, |k| *k == K::NonFinite { what: "label" }),
        (b"1e999 1:1\n", 1, 1, |k| {
            *k == K::NonFinite { what: "label" }
        }),
        (b"1 1:inf\n", 1, 5, |k| matches!(k, K::NonFinite { .. })),
        (b"1 1:NaN\n", 1, 5, |k| matches!(k, K::NonFinite { .. })),
        (b"1 1:-1e400\n", 1, 5, |k| matches!(k, K::NonFinite { .. })),
        (b"1 2:1 2:3\n", 1, 7, |k| {
            *k == K::NonIncreasingIndex {
                index: 2,
                previous: 2,
            }
        }),
        (b"1 3:1 2:3\n", 1, 7, |k| {
            *k == K::NonIncreasingIndex {
                index: 2,
                previous: 3,
            }
        }),
        (b"1 0:1\n", 1, 3, |k| {
            *k == K::IndexTooSmall { index: 0, min: 1 }
        }),
        (b"1 1:1\n-1 1:x\n", 2, 6, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"1 1:1\r\n\r\n-1\t\t1:1 1:2\r\n", 3, 9, |k| {
            matches!(k, K::NonIncreasingIndex { .. })
        }),
        ("1 1:1 # é\n1 é:2\n".as_bytes(), 2, 3, |k| {
            matches!(k, K::Expected { .. })
        }),
        (b"", 1, 1, |k| *k == K::Empty),
        (b"# only a comment\n\n", 3, 1, |k| *k == K::Empty),
        (b"1 2147483648:1\n", 1, 3, |k| {
            *k == K::Limit {
                what: "feature index",
                limit: DEFAULT_MAX_FEATURE_INDEX,
            }
        }),
        (b"1 99999999999999999999999:1\n", 1, 3, |k| {
            matches!(
                k,
                K::Limit {
                    what: "feature index",
                    ..
                }
            )
        }),
    ];
    for (input, line, column, check) in cases {
        let e = parse_err(input, &d);
        assert_eq!(
            (e.line, e.column),
            (line, column),
            "{:?}: {e:?}",
            String::from_utf8_lossy(input)
        );
        assert!(
            check(&e.kind),
            "{:?}: {e:?}",
            String::from_utf8_lossy(input)
        );
    }
    // The largest default index itself is accepted (kept sparse: 2^31 columns).
    let ds = read_libsvm_bytes(b"1 2147483647:1\n", &d).unwrap();
    assert_eq!(ds.n_features(), 2147483647);
}

#[test]
fn limit_max_feature_index_is_configurable_and_capped() {
    let opts = ReadOptions {
        max_feature_index: 10,
        ..ReadOptions::default()
    };
    assert!(read_libsvm_bytes(b"1 10:1\n", &opts).is_ok());
    let e = parse_err(b"1 10:1\n1 5:1 11:1\n", &opts);
    assert_eq!((e.line, e.column), (2, 7));
    assert_eq!(
        e.kind,
        ParseErrorKind::Limit {
            what: "feature index",
            limit: 10
        }
    );
    // Whatever the option, indices above u32::MAX are refused (columns are u32).
    let opts = ReadOptions {
        max_feature_index: u64::MAX,
        ..ReadOptions::default()
    };
    let e = parse_err(b"1 4294967296:1\n", &opts);
    assert_eq!(
        e.kind,
        ParseErrorKind::Limit {
            what: "feature index",
            limit: HARD_MAX_FEATURE_INDEX
        }
    );
}

#[test]
fn limit_max_line_len() {
    assert_eq!(DEFAULT_MAX_LINE_LEN, 16 << 20);
    let opts = ReadOptions {
        max_line_len: 12,
        ..ReadOptions::default()
    };
    // Exactly 12 bytes (CRLF's '\r' not counted) is fine; 13 is not.
    assert!(read_libsvm_bytes(b"1 1:1 2:1234\r\n", &opts).is_ok());
    let e = parse_err(b"1 1:1\n1 1:1 2:12345\n", &opts);
    assert_eq!((e.line, e.column), (2, 13));
    assert!(matches!(e.kind, ParseErrorKind::Limit { limit: 12, .. }));
    // A huge line without a newline fails at the limit without buffering it all (also through
    // a reader that hands out tiny chunks).
    let long = vec![b' '; 10_000];
    let r = std::io::BufReader::with_capacity(3, &long[..]);
    assert!(matches!(
        read_libsvm(r, &opts),
        Err(IoError::Parse(ParseError {
            line: 1,
            column: 13,
            kind: ParseErrorKind::Limit { .. }
        }))
    ));
}

#[test]
fn error_in_a_line_leaves_nothing_half_built() {
    // The reader returns an error, not a partial data set; a later good read is unaffected.
    assert!(read_libsvm_bytes(b"1 1:1 2:x\n", &ReadOptions::default()).is_err());
    let ds = read_libsvm_bytes(b"1 1:1\n", &ReadOptions::default()).unwrap();
    assert_eq!(ds.len(), 1);
}
