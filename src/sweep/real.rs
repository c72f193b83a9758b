//! The real point runner: `config::resolve` and `model::Simulator::run_into`, with one reusable
//! model simulator per worker thread (its event heap keeps its capacity across runs).

use std::cell::RefCell;

use super::{Description, Simulator};
use crate::config::{self, Experiment};
use crate::limits::RunError;
use crate::metrics::RunMetrics;

/// Resolves tables with `config::resolve` and runs `model`; `origin` names the file in errors.
pub struct Real {
    pub origin: String,
}

thread_local! {
    static MODEL: RefCell<crate::model::Simulator> = RefCell::new(crate::model::Simulator::new());
}

impl Simulator for Real {
    type Exp = Experiment;

    fn resolve(&self, table: &toml::Table) -> Result<Experiment, String> {
        config::resolve(table, &self.origin).map_err(|e| e.to_string())
    }

    fn describe(&self, exp: &Experiment) -> Description {
        Description {
            name: exp.name.clone(),
            question: exp.question.clone(),
            seed: exp.seed,
            replications: exp.replications,
            strategies: exp.strategies.iter().map(config::strategy_label).collect(),
        }
    }

    fn render(&self, exp: &Experiment) -> String {
        config::render(exp)
    }

    fn simulate_into(
        &self,
        exp: &Experiment,
        strategy: usize,
        rep: u32,
        out: &mut RunMetrics,
    ) -> Result<(), RunError> {
        MODEL.with(|m| {
            m.borrow_mut()
                .run_into(exp, &exp.strategies[strategy], rep, out)
                .map_err(RunError::from)
        })
    }
}
