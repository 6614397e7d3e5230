//! [`OpTable`]: an activity's op names and op sequence, so that the engine
//! knows which op each cycle runs and records it under that op's name.

use crate::sync::threads::Arc;
use std::fmt;

/// The most op names one activity's table may hold. Each worker's recorder
/// holds a set of histograms per op, and `/metrics` a series per op: the
/// bound keeps both small.
pub const MAX_OPS: usize = 1024;

/// An activity's op names and its op sequence: cycle `c` runs op
/// `sequence[c % sequence.len()]`, whose name is `names[that]`. Given to
/// [`ActivityConfig::ops`](super::ActivityConfig::ops), it lets the engine
/// record each op's figures under its op
/// ([`Snapshot::by_op`](crate::Snapshot::by_op)): the motor looks the cycle's
/// op index up in the sequence (one division and one load, no allocation and
/// no lock) and tells its recorder.
///
/// ```
/// use paceline::OpTable;
/// let t = OpTable::new(["read", "write"], &[0, 0, 1])?;
/// assert_eq!((t.op_of(0), t.op_of(2), t.op_of(5)), (0, 1, 1));
/// assert_eq!(t.names()[t.op_of(4)].as_ref(), "read");
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct OpTable {
    names: Arc<[Arc<str>]>,
    sequence: Arc<[u32]>,
}

impl fmt::Debug for OpTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpTable")
            .field("names", &self.names)
            .field("sequence_len", &self.sequence.len())
            .finish()
    }
}

impl OpTable {
    /// A table of `names` (distinct, at most [`MAX_OPS`]) and `sequence`
    /// (indexes into `names`, at least one), or a message saying what is
    /// wrong.
    ///
    /// ```
    /// assert!(paceline::OpTable::new(["a"], &[1]).unwrap_err().contains("op index 1"));
    /// assert!(paceline::OpTable::new(["a", "a"], &[0]).unwrap_err().contains("twice"));
    /// ```
    pub fn new<S: AsRef<str>>(
        names: impl IntoIterator<Item = S>,
        sequence: &[usize],
    ) -> Result<Self, String> {
        let names: Vec<Arc<str>> = names.into_iter().map(|n| Arc::from(n.as_ref())).collect();
        if names.len() > MAX_OPS {
            return Err(format!(
                "{} ops is more than the {MAX_OPS} an activity may name; split it into activities",
                names.len()
            ));
        }
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(format!("the op name `{n}` is given twice"));
            }
        }
        if sequence.is_empty() {
            return Err("the op sequence is empty: no op would run".to_string());
        }
        let seq = sequence
            .iter()
            .map(|&i| {
                if i < names.len() {
                    Ok(i as u32)
                } else {
                    Err(format!(
                        "the op sequence names op index {i}, but there are {} ops",
                        names.len()
                    ))
                }
            })
            .collect::<Result<Vec<u32>, String>>()?;
        Ok(Self {
            names: names.into(),
            sequence: seq.into(),
        })
    }

    /// The op names, by op index.
    ///
    /// ```
    /// let t = paceline::OpTable::new(["a", "b"], &[1])?;
    /// assert_eq!(t.names().len(), 2);
    /// # Ok::<(), String>(())
    /// ```
    pub fn names(&self) -> &[Arc<str>] {
        &self.names
    }

    /// The index (into [`names`](Self::names)) of the op cycle `cycle` runs.
    ///
    /// ```
    /// let t = paceline::OpTable::new(["a", "b"], &[1, 0])?;
    /// assert_eq!((t.op_of(0), t.op_of(1), t.op_of(2)), (1, 0, 1));
    /// # Ok::<(), String>(())
    /// ```
    #[inline]
    pub fn op_of(&self, cycle: u64) -> usize {
        self.sequence[(cycle % self.sequence.len() as u64) as usize] as usize
    }
}
