//! What a LIBSVM/LIBLINEAR user expects of the `marginkit` binary: stdin, gzip and CSV input,
//! svm-scale's flags, every model kind and kernel, probability outputs, LIBLINEAR's solvers,
//! JSON reports, grid search, quiet runs, thread-count determinism, iteration limits, help texts
//! and exit codes on bad input.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_marginkit");

fn cli_data(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name);
    p.to_str().unwrap().to_string()
}

fn lib_data(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../marginkit/tests/data")
        .join(name);
    p.to_str().unwrap().to_string()
}

fn heart_train() -> String {
    cli_data("heart_scale.train")
}

fn heart_test() -> String {
    cli_data("heart_scale.test")
}

/// auto-mpg, scaled: a regression set (392 rows, 7 features).
fn auto() -> String {
    lib_data("auto.scale.svm")
}

fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

fn run_stdin(args: &[&str], dir: &Path, input: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        out(o),
        err(o)
    );
}

#[track_caller]
fn fails(o: &Output, code: i32, needle: &str) {
    assert_eq!(o.status.code(), Some(code), "stderr: {}", err(o));
    assert!(
        err(o).contains(needle),
        "expected {needle:?} in: {}",
        err(o)
    );
    assert!(!err(o).contains("panicked"), "{}", err(o));
}

/// The one JSON object on stdout.
#[track_caller]
fn json(o: &Output) -> serde_json::Value {
    let text = out(o);
    assert_eq!(text.trim().lines().count(), 1, "one line expected: {text}");
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("valid JSON");
    assert!(v.is_object(), "{v}");
    v
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// Parses LIBSVM text rows into (label, [(index, value)]).
fn parse_rows(text: &str) -> Vec<(f64, Vec<(usize, f64)>)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split_whitespace();
            let y: f64 = it.next().unwrap().parse().unwrap();
            let feats = it
                .map(|t| {
                    let (i, v) = t.split_once(':').unwrap();
                    (i.parse().unwrap(), v.parse().unwrap())
                })
                .collect();
            (y, feats)
        })
        .collect()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Input: stdin, gzip, CSV

#[test]
fn stdin_gzip_and_file_input_train_identical_models() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = std::fs::read(heart_train()).unwrap();
    ok(&run(&["train", "-q", &heart_train(), "file.model"], d));
    ok(&run_stdin(&["train", "-q", "-", "stdin.model"], d, &text));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text).unwrap();
    std::fs::write(d.join("train.gz"), gz.finish().unwrap()).unwrap();
    ok(&run(&["train", "-q", "train.gz", "gz.model"], d));
    let file = read(d, "file.model");
    assert_eq!(file, read(d, "stdin.model"));
    assert_eq!(file, read(d, "gz.model"));

    // Without MODEL, stdin trains into stdin.model in the working directory, as svm-train names
    // the model after the training file.
    let sub = d.join("sub");
    std::fs::create_dir(&sub).unwrap();
    ok(&run_stdin(&["train", "-q", "-"], &sub, &text));
    assert_eq!(file, read(&sub, "stdin.model"));

    // Test data from stdin, predictions to stdout (summary to stderr then).
    let test = std::fs::read(heart_test()).unwrap();
    let o = run_stdin(&["predict", "-", "file.model", "-"], d, &test);
    ok(&o);
    let stdout_text = out(&o);
    let preds: Vec<&str> = stdout_text.lines().map(str::trim).collect();
    assert_eq!(preds.len(), 54);
    assert!(preds.iter().all(|l| *l == "1" || *l == "-1"), "{preds:?}");
    assert!(err(&o).starts_with("Accuracy = "), "{}", err(&o));
    let o2 = run(&["predict", &heart_test(), "file.model", "p.txt"], d);
    ok(&o2);
    assert_eq!(read(d, "p.txt"), out(&o));
    assert_eq!(out(&o2), err(&o));
    // JSON and predictions cannot share stdout.
    fails(
        &run(&["predict", "--json", &heart_test(), "file.model", "-"], d),
        1,
        "--json",
    );
}

#[test]
fn csv_input_with_label_column_by_name_position_and_index() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // heart_scale as CSV with the label in the middle.
    let rows = parse_rows(&std::fs::read_to_string(heart_train()).unwrap());
    let mut csv = String::from("f1,f2,f3,target");
    for k in 4..=13 {
        csv.push_str(&format!(",f{k}"));
    }
    csv.push('\n');
    let mut libsvm = String::new();
    for (y, feats) in &rows {
        let mut dense = [0.0; 13];
        for &(i, v) in feats {
            dense[i - 1] = v;
        }
        let cells: Vec<String> = dense.iter().map(|v| v.to_string()).collect();
        csv.push_str(&format!(
            "{},{},{}\n",
            cells[..3].join(","),
            y,
            cells[3..].join(",")
        ));
        libsvm.push_str(&format!("{y}"));
        for (k, v) in dense.iter().enumerate() {
            libsvm.push_str(&format!(" {}:{v}", k + 1));
        }
        libsvm.push('\n');
    }
    let csv_path = write(d, "heart.csv", &csv);
    let svm_path = write(d, "heart.svm", &libsvm);
    ok(&run(&["train", "-q", &svm_path, "svm.model"], d));
    ok(&run(
        &[
            "train",
            "-q",
            "--csv",
            "--label-column",
            "target",
            &csv_path,
            "name.model",
        ],
        d,
    ));
    ok(&run(
        &[
            "train",
            "-q",
            "--csv",
            "--label-column",
            "3",
            &csv_path,
            "index.model",
        ],
        d,
    ));
    assert_eq!(read(d, "svm.model"), read(d, "name.model"));
    assert_eq!(read(d, "svm.model"), read(d, "index.model"));
    let o = run(
        &[
            "predict",
            "--json",
            "--csv",
            "--label-column",
            "target",
            &csv_path,
            "name.model",
            "p.txt",
        ],
        d,
    );
    ok(&o);
    assert_eq!(json(&o)["n_samples"], 216);

    // Label first / last, and the errors.
    let small = write(
        d,
        "s.csv",
        "y,a,b\n1,0.5,0.1\n-1,-0.5,0.2\n1,0.7,-0.1\n-1,-0.4,0.3\n",
    );
    let small_last = write(
        d,
        "l.csv",
        "a,b,y\n0.5,0.1,1\n-0.5,0.2,-1\n0.7,-0.1,1\n-0.4,0.3,-1\n",
    );
    ok(&run(
        &[
            "train",
            "-q",
            "--csv",
            "--label-column",
            "first",
            &small,
            "f.model",
        ],
        d,
    ));
    ok(&run(&["train", "-q", "--csv", &small_last, "l.model"], d));
    assert_eq!(read(d, "f.model"), read(d, "l.model"));
    fails(
        &run(&["train", "--csv", "--label-column", "nope", &small], d),
        1,
        "s.csv:1:",
    );
    // --label-column needs --csv: a usage error from the parser.
    fails(
        &run(&["train", "--label-column", "y", &small], d),
        2,
        "--csv",
    );
}

// ---------------------------------------------------------------------------------------------
// svm-scale

#[test]
fn scale_save_restore_and_label_scaling() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run(
        &[
            "scale",
            "-l",
            "0",
            "-u",
            "1",
            "-y",
            "-1",
            "1",
            "-s",
            "range",
            &auto(),
        ],
        d,
    );
    ok(&o);
    let scaled = out(&o);
    let rows = parse_rows(&scaled);
    assert_eq!(rows.len(), 392);
    for (y, feats) in &rows {
        assert!((-1.0..=1.0).contains(y), "label {y}");
        for &(_, v) in feats {
            assert!((0.0..=1.0).contains(&v), "value {v}");
        }
    }
    // svm-scale writes only non-zero scaled values.
    assert!(rows.iter().flat_map(|r| &r.1).all(|&(_, v)| v != 0.0));
    // The extremes are hit exactly.
    let ys: Vec<f64> = rows.iter().map(|r| r.0).collect();
    assert!(ys.contains(&-1.0) && ys.contains(&1.0));

    // The parameter file has svm-scale's layout: y section, then x section.
    let params = read(d, "range");
    let lines: Vec<&str> = params.lines().collect();
    assert_eq!(lines[0], "y");
    assert_eq!(lines[1].split_whitespace().count(), 2);
    assert_eq!(lines[3], "x");
    assert_eq!(lines[4].split_whitespace().collect::<Vec<_>>(), ["0", "1"]);

    // Restoring on the same data reproduces the output byte for byte (also from stdin).
    let o = run(&["scale", "-r", "range", &auto()], d);
    ok(&o);
    assert_eq!(out(&o), scaled);
    let o = run_stdin(
        &["scale", "-r", "range", "-"],
        d,
        &std::fs::read(auto()).unwrap(),
    );
    ok(&o);
    assert_eq!(out(&o), scaled);

    // Restoring onto other data applies the saved ranges: v -> lower + (upper-lower)(v-min)/(max-min).
    let ranges: Vec<(usize, f64, f64)> = lines[5..]
        .iter()
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            (
                t[0].parse().unwrap(),
                t[1].parse().unwrap(),
                t[2].parse().unwrap(),
            )
        })
        .collect();
    let (ylo, yhi): (f64, f64) = {
        let t: Vec<f64> = lines[2]
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        (t[0], t[1])
    };
    let test = write(d, "t.svm", "20 1:0.5 3:-0.2 7:1\n30 2:0.1\n");
    let o = run(&["scale", "-r", "range", "-o", "t.scaled", &test], d);
    ok(&o);
    assert!(out(&o).is_empty());
    let got = parse_rows(&read(d, "t.scaled"));
    let expect_y = |y: f64| -1.0 + 2.0 * (y - ylo) / (yhi - ylo);
    assert!((got[0].0 - expect_y(20.0)).abs() < 1e-12);
    assert!((got[1].0 - expect_y(30.0)).abs() < 1e-12);
    let input = parse_rows(&read(d, "t.svm"));
    for (row_in, row_out) in input.iter().zip(&got) {
        for &(idx, min, max) in &ranges {
            let v = row_in.1.iter().find(|e| e.0 == idx).map_or(0.0, |e| e.1);
            let want = if v == min {
                0.0
            } else if v == max {
                1.0
            } else {
                (v - min) / (max - min)
            };
            let have = row_out.1.iter().find(|e| e.0 == idx).map_or(0.0, |e| e.1);
            assert!((have - want).abs() < 1e-12, "index {idx}: {have} vs {want}");
        }
    }

    // -s and -r together is a usage error (svm-scale refuses it too); a bad parameter file
    // names the file and line.
    fails(
        &run(&["scale", "-s", "a", "-r", "range", &auto()], d),
        2,
        "-r",
    );
    let bad = write(d, "bad.range", "x\n-1 1\n2 0 1\n1 0 1\n");
    fails(&run(&["scale", "-r", &bad, &auto()], d), 1, "bad.range:4:");
}

// ---------------------------------------------------------------------------------------------
// Model kinds and kernels

#[test]
fn every_svm_type_and_kernel_trains_and_predicts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: &[(&str, &str, &str, &str)] = &[
        ("0", "2", "c_svc", "rbf"),
        ("1", "2", "nu_svc", "rbf"),
        ("2", "2", "one_class", "rbf"),
        ("0", "0", "c_svc", "linear"),
        ("0", "1", "c_svc", "polynomial"),
        ("0", "3", "c_svc", "sigmoid"),
    ];
    for (s, t, name, kernel) in cases {
        let model = format!("m_{s}_{t}.model");
        ok(&run(
            &["train", "-q", "-s", s, "-t", t, &heart_train(), &model],
            d,
        ));
        let text = read(d, &model);
        assert!(
            text.starts_with(&format!("svm_type {name}\nkernel_type {kernel}\n")),
            "{text}"
        );
        let o = run(&["predict", &heart_test(), &model, "p.txt"], d);
        ok(&o);
        assert!(out(&o).starts_with("Accuracy = "), "{}", out(&o));
        let preds = read(d, "p.txt");
        assert_eq!(preds.lines().count(), 54);
        assert!(preds.lines().all(|l| l == "1" || l == "-1"), "{preds}");
    }
    for (s, name) in [("3", "epsilon_svr"), ("4", "nu_svr")] {
        let model = format!("r{s}.model");
        ok(&run(&["train", "-q", "-s", s, &auto(), &model], d));
        assert!(read(d, &model).starts_with(&format!("svm_type {name}\n")));
        let o = run(&["predict", &auto(), &model, "p.txt"], d);
        ok(&o);
        let text = out(&o);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("Mean squared error = ") && lines[0].ends_with(" (regression)"),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("Squared correlation coefficient = "));
        assert_eq!(read(d, "p.txt").lines().count(), 392);
        let o = run(&["predict", "--json", &auto(), &model, "p.txt"], d);
        let v = json(&o);
        assert!(v["mse"].as_f64().unwrap() > 0.0, "{v}");
        let rho2 = v["squared_correlation"]
            .as_f64()
            .expect("squared_correlation in predict's JSON");
        assert!(rho2 > 0.5 && rho2 <= 1.0, "{v}");
        // R^2 recomputed here from the predictions and the labels, and R^2 <= rho^2 (the
        // squared correlation is the R^2 of the best affine recalibration of the predictions).
        let pred: Vec<f64> = read(d, "p.txt")
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        let y: Vec<f64> = std::fs::read_to_string(auto())
            .unwrap()
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect();
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        let ss_res: f64 = pred.iter().zip(&y).map(|(p, t)| (p - t).powi(2)).sum();
        let ss_tot: f64 = y.iter().map(|t| (t - mean).powi(2)).sum();
        let r2 = v["r2"].as_f64().expect("r2 in predict's JSON");
        assert!((r2 - (1.0 - ss_res / ss_tot)).abs() < 1e-9, "{v}");
        assert!(r2 <= rho2 + 1e-12, "{v}");
        assert!(v.get("accuracy").is_none());
    }
}

/// Builds LIBSVM's precomputed-kernel file (`label 0:i 1:K(i,1) ... n:K(i,n)`) for the linear
/// kernel of `rows` against `basis`.
fn precomputed_file(
    rows: &[(f64, Vec<(usize, f64)>)],
    basis: &[(f64, Vec<(usize, f64)>)],
) -> String {
    let dot = |a: &[(usize, f64)], b: &[(usize, f64)]| -> f64 {
        a.iter()
            .map(|&(i, v)| b.iter().find(|e| e.0 == i).map_or(0.0, |e| v * e.1))
            .sum()
    };
    let mut s = String::new();
    for (i, (y, x)) in rows.iter().enumerate() {
        s.push_str(&format!("{y} 0:{}", i + 1));
        for (j, (_, b)) in basis.iter().enumerate() {
            s.push_str(&format!(" {}:{}", j + 1, dot(x, b)));
        }
        s.push('\n');
    }
    s
}

#[test]
fn precomputed_kernel_matches_the_linear_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let all = parse_rows(&std::fs::read_to_string(heart_train()).unwrap());
    let (train, test) = (&all[..60], &all[60..90]);
    let fmt = |rows: &[(f64, Vec<(usize, f64)>)]| -> String {
        rows.iter()
            .map(|(y, x)| {
                let f: Vec<String> = x.iter().map(|(i, v)| format!("{i}:{v}")).collect();
                format!("{y} {}\n", f.join(" "))
            })
            .collect()
    };
    let raw_train = write(d, "train.svm", &fmt(train));
    let raw_test = write(d, "test.svm", &fmt(test));
    let pre_train = write(d, "train.pre", &precomputed_file(train, train));
    let pre_test = write(d, "test.pre", &precomputed_file(test, train));

    ok(&run(
        &["train", "-q", "-t", "0", &raw_train, "lin.model"],
        d,
    ));
    ok(&run(
        &["train", "-q", "-t", "4", &pre_train, "pre.model"],
        d,
    ));
    let model = read(d, "pre.model");
    assert!(model.contains("kernel_type precomputed\n"), "{model}");
    let sv_lines: Vec<&str> = model.split("SV\n").nth(1).unwrap().lines().collect();
    assert!(sv_lines.iter().all(|l| l.contains(" 0:")), "{sv_lines:?}");
    let a = run(&["predict", &raw_test, "lin.model", "lin.txt"], d);
    let b = run(&["predict", &pre_test, "pre.model", "pre.txt"], d);
    ok(&a);
    ok(&b);
    assert_eq!(out(&a), out(&b));
    assert_eq!(read(d, "lin.txt"), read(d, "pre.txt"));

    // A precomputed model on ordinary data, and an ordinary model on precomputed data.
    let o = run(&["predict", &raw_test, "pre.model", "x.txt"], d);
    fails(&o, 1, "precomputed kernel");
    assert!(err(&o).contains("test.svm"), "{}", err(&o));
    assert!(!d.join("x.txt").exists());
    fails(
        &run(&["predict", &pre_test, "lin.model", "x.txt"], d),
        1,
        "test.pre:1:",
    );
    assert!(!d.join("x.txt").exists());
}

#[test]
fn probability_outputs_follow_libsvm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&run(
        &["train", "-q", "-b", "1", &heart_train(), "p.model"],
        d,
    ));
    let model = read(d, "p.model");
    assert!(
        model.contains("\nprobA ") && model.contains("\nprobB "),
        "{model}"
    );
    let o = run(
        &["predict", "-b", "1", &heart_test(), "p.model", "p.txt"],
        d,
    );
    ok(&o);
    let text = read(d, "p.txt");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("labels 1 -1"));
    let mut n = 0;
    for l in lines {
        let t: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(t.len(), 3, "{l}");
        let (p1, p2): (f64, f64) = (t[1].parse().unwrap(), t[2].parse().unwrap());
        assert!((p1 + p2 - 1.0).abs() < 1e-5, "{l}");
        assert_eq!(t[0], if p1 > p2 { "1" } else { "-1" }, "{l}");
        n += 1;
    }
    assert_eq!(n, 54);
    assert!(out(&o).starts_with("Accuracy = "), "{}", out(&o));

    // Without -b 1 at predict time, LIBSVM's note.
    let o = run(&["predict", &heart_test(), "p.model", "p0.txt"], d);
    ok(&o);
    assert!(
        out(&o).contains("Model supports probability estimates, but disabled in prediction."),
        "{}",
        out(&o)
    );
    assert!(read(d, "p0.txt").lines().all(|l| l == "1" || l == "-1"));

    // -b 1 with a model without probabilities: error, no output file.
    ok(&run(&["train", "-q", &heart_train(), "plain.model"], d));
    let o = run(
        &["predict", "-b", "1", &heart_test(), "plain.model", "x.txt"],
        d,
    );
    fails(&o, 1, "plain.model");
    assert!(err(&o).contains("probability"), "{}", err(&o));
    assert!(!d.join("x.txt").exists());

    // SVR: the Laplace note, then plain predicted values.
    ok(&run(
        &["train", "-q", "-s", "3", "-b", "1", &auto(), "r.model"],
        d,
    ));
    assert!(read(d, "r.model").contains("\nprobA "));
    let o = run(&["predict", "-b", "1", &auto(), "r.model", "r.txt"], d);
    ok(&o);
    let s = out(&o);
    assert!(
        s.starts_with("Prob. model for test data: target value = predicted value + z,\nz: Laplace distribution e^(-|z|/sigma)/(2sigma),sigma="),
        "{s}"
    );
    assert!(s.contains("Mean squared error = "), "{s}");
    let values = read(d, "r.txt");
    assert_eq!(values.lines().count(), 392);
    assert!(values.lines().all(|l| l.parse::<f64>().is_ok()));
}

/// `--platt libsvm`: the sigmoid with intercept, its probB written (nonzero here) and used by
/// predict (the probabilities follow the model's A and B, not the through-origin B = 0); refused
/// without -b 1, for SVR and with --linear.
#[test]
fn platt_with_intercept_writes_and_uses_prob_b() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&run(
        &[
            "train",
            "-q",
            "-b",
            "1",
            "--platt",
            "libsvm",
            &heart_train(),
            "p.model",
        ],
        d,
    ));
    let model = read(d, "p.model");
    let line = |key: &str| -> f64 {
        let l = model
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in {model}"));
        l[key.len()..].trim().parse().unwrap()
    };
    let (a, b) = (line("probA "), line("probB "));
    assert!(a < 0.0 && b != 0.0, "probA {a} probB {b}");
    // Decision values (-b 0 prints only labels; --json has no values), so compare predict -b 1
    // with the sigmoid applied to the model's decision values through the library.
    let m = marginkit::svm::model_io::load_model(&d.join("p.model")).unwrap();
    let test = marginkit::data::libsvm_fmt::read_libsvm_path(
        Path::new(&heart_test()),
        &marginkit::data::libsvm_fmt::ReadOptions::default(),
    )
    .unwrap();
    let dec = m.decision_values(&test.x);
    ok(&run(
        &["predict", "-b", "1", &heart_test(), "p.model", "p.txt"],
        d,
    ));
    let text = read(d, "p.txt");
    assert_eq!(text.lines().next(), Some("labels 1 -1"));
    for (l, dv) in text.lines().skip(1).zip(&dec) {
        let p1: f64 = l.split_whitespace().nth(1).unwrap().parse().unwrap();
        let want = 1.0 / (1.0 + (a * dv[0] + b).exp());
        assert!((p1 - want).abs() < 1e-6, "{l}: P(+1) {p1}, sigmoid {want}");
    }
    for (args, why) in [
        (&["train", "-q", "--platt", "libsvm"][..], "-b 1"),
        (
            &["train", "-q", "-s", "3", "-b", "1", "--platt", "libsvm"][..],
            "-b 1",
        ),
        (
            &["train", "-q", "--linear", "--platt", "libsvm"][..],
            "--platt",
        ),
    ] {
        let mut v = args.to_vec();
        let train = heart_train();
        v.extend([train.as_str(), "x.model"]);
        fails(&run(&v, d), 1, why);
        assert!(!d.join("x.model").exists());
    }
}

// ---------------------------------------------------------------------------------------------
// LIBLINEAR

#[test]
fn linear_solvers_bias_cross_validation_and_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (s, name) in [("1", "L2R_L2LOSS_SVC_DUAL"), ("3", "L1LOSS_SVC_DUAL")] {
        let model = format!("l{s}.model");
        let o = run(
            &[
                "train",
                "--linear",
                "-s",
                s,
                "-B",
                "1",
                &heart_train(),
                &model,
            ],
            d,
        );
        ok(&o);
        assert!(out(&o).contains("optimization finished"), "{}", out(&o));
        assert!(out(&o).contains("Objective value = -"), "{}", out(&o));
        let text = read(d, &model);
        assert!(text.starts_with("solver_type ") && text.lines().next().unwrap().ends_with(name));
        assert!(text.contains("\nbias 1\n"), "{text}");
        let o = run(&["predict", &heart_test(), &model, "p.txt"], d);
        ok(&o);
        let acc: f64 = out(&o)["Accuracy = ".len()..]
            .split('%')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(acc > 75.0, "{}", out(&o));

        let o = run(
            &["train", "--linear", "-s", s, "-v", "5", &heart_train()],
            d,
        );
        ok(&o);
        let cv = out(&o);
        assert!(
            cv.starts_with("Cross Validation Accuracy = ") && cv.trim_end().ends_with('%'),
            "{cv}"
        );
        let o = run(
            &[
                "train",
                "--linear",
                "-s",
                s,
                "-v",
                "5",
                "--json",
                &heart_train(),
            ],
            d,
        );
        let v = json(&o);
        assert_eq!(v["cv_folds"], 5);
        assert!(v["accuracy"].as_f64().unwrap() > 70.0);

        let o = run(
            &[
                "train",
                "--linear",
                "-s",
                s,
                "-B",
                "1",
                "--json",
                &heart_train(),
                "j.model",
            ],
            d,
        );
        let v = json(&o);
        for key in [
            "train_seconds",
            "objective",
            "rho",
            "n_sv",
            "iterations",
            "status",
        ] {
            assert!(v.get(key).is_some(), "missing {key}: {v}");
        }
        assert_eq!(v["status"], "converged");
        assert!(v["objective"].as_f64().unwrap() < 0.0, "{v}");
        assert!(!out(&o).contains("optimization finished"));
        assert!(err(&o).contains("optimization finished"), "{}", err(&o));
    }
    for s in ["12", "13"] {
        let model = format!("r{s}.model");
        ok(&run(
            &[
                "train",
                "-q",
                "--linear",
                "-s",
                s,
                "-B",
                "1",
                &auto(),
                &model,
            ],
            d,
        ));
        let o = run(&["predict", &auto(), &model, "p.txt"], d);
        ok(&o);
        assert!(out(&o).starts_with("Mean squared error = "), "{}", out(&o));
        assert!(out(&o).contains("Squared correlation coefficient = "));
        let v = json(&run(&["predict", "--json", &auto(), &model, "p.txt"], d));
        assert!(
            v["mse"].as_f64().is_some() && v["squared_correlation"].as_f64().unwrap() > 0.5,
            "{v}"
        );
        let o = run(&["train", "--linear", "-s", s, "-v", "4", &auto()], d);
        ok(&o);
        assert!(out(&o).starts_with("Cross Validation Mean squared error = "));
    }
    // LIBLINEAR models have no probability outputs; solvers outside 1/3/12/13 are refused.
    fails(
        &run(
            &["predict", "-b", "1", &heart_test(), "l1.model", "x.txt"],
            d,
        ),
        1,
        "probability",
    );
    fails(
        &run(&["train", "--linear", "-s", "0", &heart_train()], d),
        1,
        "-s 0",
    );
}

// ---------------------------------------------------------------------------------------------
// JSON, grid, quiet, threads, iteration limits

#[test]
fn train_json_has_the_documented_keys_for_kernel_models() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run(&["train", "--json", "-s", "3", &auto(), "r.model"], d);
    ok(&o);
    let v = json(&o);
    for key in [
        "train_seconds",
        "objective",
        "rho",
        "n_sv",
        "iterations",
        "status",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert!(v["train_seconds"].as_f64().unwrap() >= 0.0);
    assert!(v["n_sv"].as_u64().unwrap() > 0);
    // Human lines go to stderr with --json.
    assert!(err(&o).contains("optimization finished"), "{}", err(&o));

    // Multiclass: one objective and rho per binary subproblem.
    let iris = lib_data("iris.scale.svm");
    let v = json(&run(&["train", "--json", &iris, "i.model"], d));
    assert_eq!(v["objective"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["rho"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["status"], "converged");
    let v = json(&run(&["predict", "--json", &iris, "i.model", "p.txt"], d));
    assert!(v["accuracy"].as_f64().unwrap() > 90.0, "{v}");
}

#[test]
fn grid_linear_kernel_and_regression() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run(
        &[
            "grid",
            "-t",
            "0",
            "--log2c",
            "-2,2,2",
            "-v",
            "3",
            "--json",
            &heart_train(),
        ],
        d,
    );
    ok(&o);
    let v = json(&o);
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 3, "only C varies for -t 0: {v}");
    assert!(
        pts.iter().all(|p| p["gamma"].is_null()),
        "no gamma for -t 0: {v}"
    );
    let cs: Vec<f64> = pts.iter().map(|p| p["c"].as_f64().unwrap()).collect();
    assert_eq!(cs, [0.25, 1.0, 4.0]);
    assert_eq!(v["metric"], "accuracy");

    // Text mode: one line per point without gamma, the best last as `C score`.
    let o = run(
        &[
            "grid",
            "-t",
            "0",
            "--log2c",
            "-2,2,2",
            "-v",
            "3",
            &heart_train(),
        ],
        d,
    );
    ok(&o);
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[..3]
        .iter()
        .all(|l| l.starts_with("log2c=") && !l.contains("log2g")));
    assert_eq!(lines.last().unwrap().split_whitespace().count(), 2);

    let o = run(
        &[
            "grid",
            "-s",
            "3",
            "--log2c",
            "-1,1,2",
            "--log2g",
            "-2,-1,1",
            "-v",
            "3",
            "--json",
            &auto(),
        ],
        d,
    );
    ok(&o);
    let v = json(&o);
    assert_eq!(v["metric"], "mse");
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 4);
    let best = v["best"]["score"].as_f64().unwrap();
    assert!(
        pts.iter().all(|p| p["score"].as_f64().unwrap() >= best),
        "{v}"
    );
    assert!(pts.iter().all(|p| p["gamma"].as_f64().is_some()), "{v}");
    let o = run(
        &[
            "grid",
            "-s",
            "3",
            "--log2c",
            "-1,1,2",
            "--log2g",
            "-2,-1,1",
            "-v",
            "3",
            &auto(),
        ],
        d,
    );
    ok(&o);
    let text = out(&o);
    assert!(text.lines().next().unwrap().contains(" mse="), "{text}");
    assert_eq!(text.lines().last().unwrap().split_whitespace().count(), 3);
    fails(&run(&["grid", "-v", "1", &heart_train()], d), 1, "-v");
}

/// The grid's score at a point must be the cross-validation score `train -v` gives there (same
/// folds, same seed).
#[test]
fn grid_scores_equal_train_cross_validation() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = json(&run(
        &[
            "grid",
            "-t",
            "0",
            "--log2c",
            "-1,1,1",
            "-v",
            "3",
            "--json",
            &heart_train(),
        ],
        d,
    ));
    for p in v["points"].as_array().unwrap() {
        let c = p["c"].as_f64().unwrap().to_string();
        let cv = json(&run(
            &[
                "train",
                "-t",
                "0",
                "-c",
                &c,
                "-v",
                "3",
                "--json",
                &heart_train(),
            ],
            d,
        ));
        assert_eq!(p["score"], cv["accuracy"], "C = {c}");
    }
}

#[test]
fn quiet_is_silent_and_threads_do_not_change_models() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run(
        &[
            "train",
            "-q",
            "--threads",
            "1",
            "-b",
            "1",
            &heart_train(),
            "t1.model",
        ],
        d,
    );
    ok(&o);
    assert!(
        out(&o).is_empty() && err(&o).is_empty(),
        "{}{}",
        out(&o),
        err(&o)
    );
    ok(&run(
        &[
            "train",
            "-q",
            "--threads",
            "2",
            "-b",
            "1",
            &heart_train(),
            "t2.model",
        ],
        d,
    ));
    assert_eq!(read(d, "t1.model"), read(d, "t2.model"));
    let iris = lib_data("iris.scale.svm");
    ok(&run(
        &["train", "-q", "--threads", "1", &iris, "i1.model"],
        d,
    ));
    ok(&run(
        &["train", "-q", "--threads", "2", &iris, "i2.model"],
        d,
    ));
    assert_eq!(read(d, "i1.model"), read(d, "i2.model"));
    ok(&run(
        &[
            "train",
            "-q",
            "--linear",
            "--threads",
            "1",
            &heart_train(),
            "l1.model",
        ],
        d,
    ));
    ok(&run(
        &[
            "train",
            "-q",
            "--linear",
            "--threads",
            "2",
            &heart_train(),
            "l2.model",
        ],
        d,
    ));
    assert_eq!(read(d, "l1.model"), read(d, "l2.model"));

    let o = run(
        &[
            "predict",
            "-q",
            "--threads",
            "2",
            &heart_test(),
            "t1.model",
            "p.txt",
        ],
        d,
    );
    ok(&o);
    assert!(out(&o).is_empty() && err(&o).is_empty());
    assert_eq!(read(d, "p.txt").lines().count(), 54);
    let o = run(
        &[
            "predict",
            "-q",
            "-b",
            "1",
            &heart_test(),
            "t1.model",
            "p.txt",
        ],
        d,
    );
    ok(&o);
    assert!(out(&o).is_empty() && err(&o).is_empty());
}

#[test]
fn max_iter_reports_the_stop_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run(
        &[
            "train",
            "--max-iter",
            "3",
            "--json",
            &heart_train(),
            "m.model",
        ],
        d,
    );
    ok(&o);
    let v = json(&o);
    assert_eq!(v["status"], "max_iterations", "{v}");
    assert_eq!(v["iterations"], 3, "{v}");
    assert!(err(&o).contains("warning"), "{}", err(&o));
    assert!(!err(&o).contains("converged"), "{}", err(&o));
    let o = run(&["train", "--max-iter", "3", &heart_train(), "m.model"], d);
    ok(&o);
    assert!(!out(&o).contains("converged"), "{}", out(&o));
    assert!(err(&o).contains("warning"), "{}", err(&o));
    // The model is still written: it is usable, only not optimal.
    assert!(read(d, "m.model").starts_with("svm_type c_svc"));

    let o = run(
        &[
            "train",
            "--linear",
            "-s",
            "3",
            "--max-iter",
            "1",
            "--json",
            &heart_train(),
            "l.model",
        ],
        d,
    );
    ok(&o);
    let v = json(&o);
    assert_eq!(v["status"], "max_iterations", "{v}");
    assert!(err(&o).contains("warning"), "{}", err(&o));

    fails(
        &run(&["train", "--time-limit", "0", &heart_train()], d),
        1,
        "--time-limit",
    );
}

// ---------------------------------------------------------------------------------------------
// Help and errors

#[test]
fn help_texts_list_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run(&["--help"], d);
    ok(&o);
    for cmd in ["train", "predict", "scale", "grid", "demo"] {
        assert!(out(&o).contains(cmd), "{}", out(&o));
    }
    let o = run(&["train", "--help"], d);
    ok(&o);
    let h = out(&o);
    for flag in [
        "-s <",
        "-t <",
        "-d <",
        "-g <",
        "-r <",
        "-c <",
        "-n <",
        "-p <",
        "-m <",
        "-e <",
        "-h <",
        "-b <",
        "--class-weight",
        "-wLABEL",
        "-v <",
        "-q",
        "--linear",
        "-B <",
        "--threads",
        "--json",
        "--max-iter",
        "--time-limit",
        "--seed",
        "--csv",
        "--label-column",
        "--help",
    ] {
        assert!(h.contains(flag), "train --help lacks {flag}:\n{h}");
    }
    // -h is LIBSVM's shrinking flag: without a value it is a usage error, not help.
    fails(&run(&["train", "-h"], d), 2, "-h");
    let o = run(&["predict", "--help"], d);
    ok(&o);
    for flag in [
        "-b <",
        "-q",
        "--json",
        "TEST_FILE",
        "MODEL_FILE",
        "OUTPUT_FILE",
    ] {
        assert!(out(&o).contains(flag), "predict --help lacks {flag}");
    }
    let o = run(&["scale", "--help"], d);
    ok(&o);
    for flag in ["-l <", "-u <", "-y <", "-s <", "-r <"] {
        assert!(out(&o).contains(flag), "scale --help lacks {flag}");
    }
}

#[test]
fn usage_and_input_errors_have_exit_codes_and_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = heart_train();
    fails(
        &run(&["train", "--no-such-flag", &t], d),
        2,
        "--no-such-flag",
    );
    fails(&run(&["frobnicate"], d), 2, "frobnicate");
    fails(&run(&["train", "-q", "missing.txt"], d), 1, "missing.txt");
    fails(
        &run(&["predict", &heart_test(), "missing.model", "o.txt"], d),
        1,
        "missing.model",
    );
    ok(&run(&["train", "-q", &t, "good.model"], d));
    fails(
        &run(&["predict", "missing.txt", "good.model", "o.txt"], d),
        1,
        "missing.txt",
    );
    assert!(!d.join("o.txt").exists());
    fails(&run(&["train", "-v", "1", &t], d), 1, "cross validation");
    fails(&run(&["train", "--threads", "0", &t], d), 1, "--threads");
    fails(
        &run(&["train", "-q", "-w1", "abc", &t], d),
        1,
        "class weight",
    );
    fails(&run(&["train", "-q", "-wx", "2", &t], d), 1, "class weight");
    fails(
        &run(&["train", "-q", "--class-weight", "1", &t], d),
        1,
        "LABEL:WEIGHT",
    );
    fails(&run(&["train", "-h", "2", &t], d), 2, "-h");
    assert!(leftovers(d).is_empty(), "{:?}", leftovers(d));
}

#[test]
fn unwritable_outputs_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = heart_train();
    // The model path is a directory: the rename fails after the temporary file was written.
    std::fs::create_dir(d.join("taken")).unwrap();
    fails(&run(&["train", "-q", &t, "taken"], d), 1, "taken");
    assert!(leftovers(d).is_empty(), "{:?}", leftovers(d));
    fails(
        &run(&["train", "-q", &t, "no/such/dir/m.model"], d),
        1,
        "no/such/dir/m.model",
    );
    ok(&run(&["train", "-q", &t, "m.model"], d));
    fails(
        &run(&["predict", &heart_test(), "m.model", "taken"], d),
        1,
        "taken",
    );
    fails(&run(&["scale", "-s", "taken", &t], d), 1, "taken");
    fails(
        &run(&["train", "--linear", "-q", &t, "taken"], d),
        1,
        "taken",
    );
    assert!(leftovers(d).is_empty(), "{:?}", leftovers(d));

    // A read-only directory (skipped when running as root, who may write anyway).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let ro = d.join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        if std::fs::write(ro.join("probe"), "x").is_err() {
            fails(&run(&["train", "-q", &t, "ro/m.model"], d), 1, "ro/m.model");
            assert!(std::fs::read_dir(&ro).unwrap().next().is_none());
        }
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn corrupt_precomputed_serial_in_a_model_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let test = write(d, "t.pre", "1 0:1 1:4 2:1\n-1 0:2 1:1 2:4\n");
    // LIBSVM writes each support vector of a precomputed model as `COEF 0:ID`; a huge ID must be
    // refused, not overflow in the feature check.
    for sv in ["0:1e300", "0:-3", "0:2.5", "0:0", "5:1", "", "0:1 2:1"] {
        let model = write(
            d,
            "bad.model",
            &format!(
                "svm_type c_svc\nkernel_type precomputed\nnr_class 2\ntotal_sv 2\nrho 0.5\nlabel 1 -1\nnr_sv 1 1\nSV\n1 {sv}\n-1 0:2 \n"
            ),
        );
        let o = run(&["predict", &test, &model, "o.txt"], d);
        fails(&o, 1, "bad.model:9:");
        assert!(!d.join("o.txt").exists());
    }
}

/// Cross-validation, grid search and Platt scaling train on subsets of a precomputed-kernel
/// file; the serial numbers then still index the full kernel rows, as in LIBSVM.
#[test]
fn precomputed_kernel_cross_validation_grid_and_probability() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let all = parse_rows(&std::fs::read_to_string(heart_train()).unwrap());
    let rows = &all[..60];
    let pre = write(d, "train.pre", &precomputed_file(rows, rows));
    let o = run(&["train", "-t", "4", "-v", "4", "--json", &pre], d);
    ok(&o);
    assert!(json(&o)["accuracy"].as_f64().unwrap() > 60.0);
    ok(&run(
        &["grid", "-t", "4", "--log2c", "-1,1,2", "-v", "3", &pre],
        d,
    ));
    ok(&run(
        &["train", "-q", "-t", "4", "-b", "1", &pre, "p.model"],
        d,
    ));
    let o = run(&["predict", "-b", "1", &pre, "p.model", "p.txt"], d);
    ok(&o);
    assert!(read(d, "p.txt").starts_with("labels "));
}
