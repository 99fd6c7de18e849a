//! Writes real AID, robust and path state files (the seed corpus of the `fuzz_method_state`
//! target): runs on a LIBSVM data set stopped by an observer after k reports, for every AID model,
//! every robust method and the kernel and linear path engines. Usage: `method_states DATA OUT_DIR`.

use std::ops::ControlFlow;
use std::path::PathBuf;

use marginkit::aid::lad::{self, AidLadParams};
use marginkit::aid::s3vm::{self, AidS3vmParams, BnbLimits, S3vmData};
use marginkit::aid::svm::{self, AidSvmParams};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::error::FitError;
use marginkit::fit::Control;
use marginkit::path::{self, Grid, PathData, PathParams};
use marginkit::robust::cccp::THETA_GRID;
use marginkit::robust::select::{select, Method, SelectParams};
use marginkit::robust::{PathKind, RobustData, RobustParams, Task};
use marginkit::solver::{IterStats, Observer};
use marginkit::svm::{Gamma, KernelKind, KernelParams};
use marginkit::{Dataset, KernelSpec};

/// Stops at report number `k`.
struct StopAt(usize);

impl Observer for StopAt {
    fn on_iter(&mut self, _: &IterStats) -> ControlFlow<()> {
        self.0 = self.0.saturating_sub(1);
        if self.0 == 0 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        return Err("usage: method_states DATA OUT_DIR".into());
    }
    let data = read_libsvm_path(&args[1], &ReadOptions::default())?;
    let out = PathBuf::from(&args[2]);
    std::fs::create_dir_all(&out)?;
    let mut written = 0;
    let mut save = |name: String, bytes: Option<Vec<u8>>| -> std::io::Result<()> {
        if let Some(b) = bytes {
            std::fs::write(out.join(name), b)?;
            written += 1;
        }
        Ok(())
    };
    let small: Dataset = data.subset(&(0..data.len().min(120)).collect::<Vec<_>>());
    for k in [1, 3, 8] {
        let lad = AidLadParams::new().r0(0.05).check()?;
        let c = lad::fit(&lad, &data, &mut Control::new(StopAt(k)))?.checkpoint;
        save(format!("aid_lad_{k}"), c.map(|c| c.to_bytes()))?;
        for kernel in [None, Some(Gamma::Value(0.05))] {
            let mut p = AidSvmParams::new().r0(0.02);
            if let Some(gamma) = kernel {
                p = p.kernel(KernelParams {
                    kind: KernelKind::Rbf,
                    gamma,
                    ..KernelParams::default()
                });
            }
            let p = p.check()?;
            let c = svm::fit(&p, &data, &mut Control::new(StopAt(k)))?.checkpoint;
            let tag = if kernel.is_some() { "rbf" } else { "linear" };
            save(format!("aid_svm_{tag}_{k}"), c.map(|c| c.to_bytes()))?;
        }
        let mut semi = data.clone();
        semi.y.iter_mut().skip(20).for_each(|v| *v = 0.0);
        let p = AidS3vmParams::new()
            .c_labeled(0.05)
            .c_unlabeled(0.01)
            .bnb(BnbLimits {
                max_nodes: 50,
                time_limit: None,
                rel_gap: 1e-6,
            })
            .gap_tol(0.0)
            .max_iter(2)
            .check()?;
        let c = s3vm::fit(&p, S3vmData::new(&semi), &mut Control::new(StopAt(k)))?.checkpoint;
        save(format!("aid_s3vm_{k}"), c.map(|c| c.to_bytes()))?;
    }
    for k in [2, 15, 60] {
        for (task, kind, method, name) in [
            (Task::Svc, PathKind::Theta, Method::Path, "svc_theta"),
            (Task::Svc, PathKind::S, Method::Path, "svc_s"),
            (Task::Svr, PathKind::Theta, Method::Path, "svr_theta"),
            (
                Task::Svc,
                PathKind::Theta,
                Method::Cccp(THETA_GRID.to_vec()),
                "svc_cccp",
            ),
        ] {
            let rbf = KernelParams {
                gamma: Gamma::Value(0.1),
                ..KernelParams::default()
            };
            let select_stopped = |p: RobustParams| {
                let sp = SelectParams::new()
                    .robust(p.task(task).kind(kind))
                    .method(method.clone())
                    .c_grid(vec![1.0, 10.0])
                    .check()?;
                let fit = select(&sp, &RobustData::new(&small), &mut Control::new(StopAt(k)))?;
                Ok::<_, FitError>(fit.checkpoint)
            };
            let c = select_stopped(RobustParams::new().kernel(rbf).keep_solutions(k == 15))?;
            save(format!("robust_{name}_{k}"), c.map(|c| c.to_bytes()))?;
            if method != Method::Path {
                continue;
            }
            // The linear engine's state (outlier weights `w_o`, `sum_o`).
            let linear = KernelParams {
                kind: KernelKind::Linear,
                ..KernelParams::default()
            };
            let c = select_stopped(
                RobustParams::new()
                    .kernel(linear)
                    .bias(Some(1.0))
                    .keep_solutions(k == 15),
            )?;
            save(format!("robust_{name}_linear_{k}"), c.map(|c| c.to_bytes()))?;
        }
    }
    for k in [1, 4, 40] {
        let grid = Grid::Log {
            c_min: 0.01,
            c_max: 100.0,
            points: 6,
        };
        for (name, p) in [
            (
                "kernel",
                PathParams::kernel(KernelSpec::Rbf { gamma: 0.1 }).grid(grid.clone()),
            ),
            ("linear", PathParams::linear().bias(Some(1.0)).grid(grid)),
        ] {
            let p = p.keep_solutions(k == 4).check()?;
            let c = path::fit(&p, &PathData::new(&small), &mut Control::new(StopAt(k)))?.checkpoint;
            save(format!("path_{name}_{k}"), c.map(|c| c.to_bytes()))?;
        }
    }
    println!("{written} state files in {}", out.display());
    Ok(())
}
