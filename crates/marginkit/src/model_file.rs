//! What kind of file a path holds, from its first bytes: the model files `predict` reads (LIBSVM,
//! LIBLINEAR, marginkit's LAD JSON) and the other files of the toolkit that users hand to
//! `predict` by mistake (state files, svm-scale range files, prediction or label files, data).
//! A front end names the kind in its error instead of failing on the first unknown keyword.

/// The kind of a file, as far as its first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A LIBSVM model (`svm_type ...`).
    LibsvmModel,
    /// A LIBLINEAR model (`solver_type ...`).
    LiblinearModel,
    /// marginkit's LAD regression model (`{"model":"lad",...}`, written by `lad` and `aid lad`).
    LadModel,
    /// A marginkit state file (an 8-byte `MK...` magic), written when a run stops early;
    /// `of` names the command that continues it.
    StateFile {
        /// The command that reads it with `--resume`.
        of: &'static str,
    },
    /// An svm-scale range file (`x` or `y` on its first line).
    ScaleRange,
    /// One number per line: predictions or cluster labels.
    Labels,
    /// Data in LIBSVM format (`label index:value ...`).
    LibsvmData,
    /// Anything else.
    Unknown,
}

impl FileKind {
    /// A phrase naming the kind, for messages ("a LIBLINEAR model", ...).
    pub fn describe(&self) -> String {
        match self {
            FileKind::LibsvmModel => "a LIBSVM model".into(),
            FileKind::LiblinearModel => "a LIBLINEAR model".into(),
            FileKind::LadModel => "a LAD regression model (JSON)".into(),
            FileKind::StateFile { of } => {
                format!("a state file of a stopped `{of}` run (continue it with `{of} --resume`)")
            }
            FileKind::ScaleRange => "an svm-scale range file (for `scale -r`)".into(),
            FileKind::Labels => "a file of one number per line (predictions or labels)".into(),
            FileKind::LibsvmData => "data in LIBSVM format".into(),
            FileKind::Unknown => "not a file marginkit recognises".into(),
        }
    }

    /// True for the kinds `predict` can use.
    pub fn is_model(&self) -> bool {
        matches!(
            self,
            FileKind::LibsvmModel | FileKind::LiblinearModel | FileKind::LadModel
        )
    }
}

/// The kind of a file from its first bytes (a few kilobytes are plenty).
pub fn identify(head: &[u8]) -> FileKind {
    if head.len() >= 8 && head.starts_with(b"MK") {
        let magic = &head[..8];
        if magic
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            let of = match &magic[2..5] {
                b"FIT" | b"SMO" => "train",
                b"AID" => "aid",
                b"PAT" => "path",
                b"ROB" => "robust",
                _ => "marginkit",
            };
            return FileKind::StateFile { of };
        }
    }
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}');
    let first = text.lines().next().unwrap_or("").trim();
    if first.starts_with("svm_type ") {
        return FileKind::LibsvmModel;
    }
    if first.starts_with("solver_type ") {
        return FileKind::LiblinearModel;
    }
    let compact: String = first.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.starts_with("{\"model\":\"lad\"") {
        return FileKind::LadModel;
    }
    if first == "x" || first == "y" {
        return FileKind::ScaleRange;
    }
    // Judge only whole lines: the last one may be cut by the size of `head`.
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => text,
    };
    let lines: Vec<&str> = complete
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return FileKind::Unknown;
    }
    if lines.iter().all(|l| l.parse::<f64>().is_ok()) {
        return FileKind::Labels;
    }
    let data_line = |l: &&str| {
        let mut t = l.split_whitespace();
        t.next().is_some_and(|y| y.parse::<f64>().is_ok())
            && t.all(|tok| {
                tok.split_once(':')
                    .is_some_and(|(i, v)| i.parse::<u64>().is_ok() && v.parse::<f64>().is_ok())
            })
    };
    if lines.iter().all(data_line) {
        return FileKind::LibsvmData;
    }
    FileKind::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_apart() {
        let cases: [(&[u8], FileKind); 11] = [
            (b"svm_type c_svc\nkernel_type rbf\n", FileKind::LibsvmModel),
            (
                b"solver_type L2R_L2LOSS_SVC_DUAL\nnr_class 2\n",
                FileKind::LiblinearModel,
            ),
            (
                b"{\"model\":\"lad\",\"has_intercept\":true,\"intercept\":1e0,\"coef\":[2e0]}\n",
                FileKind::LadModel,
            ),
            (b"MKFITCK2\x01\x02", FileKind::StateFile { of: "train" }),
            (b"MKAIDCK1\x00", FileKind::StateFile { of: "aid" }),
            (b"MKROBCK3\x00", FileKind::StateFile { of: "robust" }),
            (b"x\n-1 1\n1 0 5\n", FileKind::ScaleRange),
            (b"0\n1\n1\n0\n", FileKind::Labels),
            (b"+1 1:0.5 3:1\n-1 2:1\n", FileKind::LibsvmData),
            (b"a,b,label\n1,2,0\n", FileKind::Unknown),
            (b"", FileKind::Unknown),
        ];
        for (head, kind) in cases {
            assert_eq!(identify(head), kind, "{}", String::from_utf8_lossy(head));
        }
        assert!(FileKind::LadModel.is_model());
        assert!(!FileKind::Labels.is_model());
    }

    /// A head cut inside a line judges the whole lines only.
    #[test]
    fn a_cut_last_line_is_ignored() {
        assert_eq!(identify(b"1.5\n2.5\n3:"), FileKind::Labels);
    }
}
