//! The one encoder and bounds-checked decoder of state-file fields (the form is described in
//! the module documentation of [`crate::persist`]).

use super::CheckpointError;

/// Appends little-endian fields to a state file body.
#[derive(Debug, Default)]
pub(crate) struct Enc(Vec<u8>);

impl Enc {
    /// A body that starts with `magic`.
    pub fn new(magic: &str) -> Self {
        Self(magic.as_bytes().to_vec())
    }
    /// The bytes written (without a checksum: see [`super::seal`]).
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn bool(&mut self, v: bool) {
        self.0.push(u8::from(v));
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn usize(&mut self, v: usize) {
        self.u64(v as u64);
    }
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    /// Raw bytes, without a length.
    pub fn raw(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    pub fn f64s(&mut self, v: &[f64]) {
        self.usize(v.len());
        v.iter().for_each(|&x| self.f64(x));
    }
    pub fn usizes(&mut self, v: &[usize]) {
        self.usize(v.len());
        v.iter().for_each(|&x| self.usize(x));
    }
    pub fn u32s(&mut self, v: &[u32]) {
        self.usize(v.len());
        v.iter().for_each(|&x| self.u32(x));
    }
    pub fn f32s(&mut self, v: &[f32]) {
        self.usize(v.len());
        v.iter().for_each(|&x| self.u32(x.to_bits()));
    }
    pub fn i8s(&mut self, v: &[i8]) {
        self.usize(v.len());
        self.0.extend(v.iter().map(|&x| x as u8));
    }
    pub fn u8s(&mut self, v: &[u8]) {
        self.usize(v.len());
        self.0.extend_from_slice(v);
    }
    pub fn bools(&mut self, v: &[bool]) {
        self.usize(v.len());
        self.0.extend(v.iter().map(|&b| u8::from(b)));
    }
    pub fn opt_f64(&mut self, v: Option<f64>) {
        match v {
            Some(x) => {
                self.u8(1);
                self.f64(x);
            }
            None => self.u8(0),
        }
    }
    pub fn opt_f64s(&mut self, v: Option<&[f64]>) {
        match v {
            Some(x) => {
                self.u8(1);
                self.f64s(x);
            }
            None => self.u8(0),
        }
    }
}

/// Reads [`Enc`]'s fields from a body; every error names the kind of state file.
#[derive(Debug)]
pub(crate) struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
    file: &'static str,
}

impl<'a> Dec<'a> {
    /// A decoder over `buf` (of a state file of kind `file`) starting at `pos`.
    pub fn at(buf: &'a [u8], pos: usize, file: &'static str) -> Self {
        Self {
            buf,
            pos: pos.min(buf.len()),
            file,
        }
    }
    /// The offset of the next field.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// The kind of state file.
    pub fn file(&self) -> &'static str {
        self.file
    }
    /// [`CheckpointError::BadTag`] for this file.
    pub fn bad_tag(&self, field: &'static str, value: impl Into<u64>) -> CheckpointError {
        CheckpointError::BadTag {
            file: self.file,
            field,
            value: value.into(),
        }
    }
    /// [`CheckpointError::Invalid`] for this file.
    pub fn invalid(&self, field: &'static str, reason: &'static str) -> CheckpointError {
        CheckpointError::Invalid {
            file: self.file,
            field,
            reason,
        }
    }
    fn truncated(&self, need: u64) -> CheckpointError {
        CheckpointError::Truncated {
            file: self.file,
            at: self.pos,
            need,
        }
    }
    /// The next `k` bytes.
    pub fn bytes(&mut self, k: usize) -> Result<&'a [u8], CheckpointError> {
        if k > self.remaining() {
            return Err(self.truncated(k as u64));
        }
        let s = &self.buf[self.pos..self.pos + k];
        self.pos += k;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], CheckpointError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }
    pub fn u8(&mut self) -> Result<u8, CheckpointError> {
        Ok(self.bytes(1)?[0])
    }
    /// A flag byte: 0 or 1.
    pub fn bool(&mut self) -> Result<bool, CheckpointError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            t => Err(self.bad_tag("flag byte", t)),
        }
    }
    pub fn u32(&mut self) -> Result<u32, CheckpointError> {
        self.array().map(u32::from_le_bytes)
    }
    pub fn u64(&mut self) -> Result<u64, CheckpointError> {
        self.array().map(u64::from_le_bytes)
    }
    pub fn usize(&mut self) -> Result<usize, CheckpointError> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| self.invalid("count", "out of range"))
    }
    pub fn f64(&mut self) -> Result<f64, CheckpointError> {
        self.u64().map(f64::from_bits)
    }
    /// A length that the remaining bytes can hold at `each` bytes per entry (checked before
    /// anything is allocated for the entries).
    pub fn len(&mut self, each: usize) -> Result<usize, CheckpointError> {
        let len = self.u64()?;
        let need = len.saturating_mul(each as u64);
        if need > self.remaining() as u64 {
            return Err(self.truncated(need));
        }
        Ok(len as usize)
    }
    pub fn f64s(&mut self) -> Result<Vec<f64>, CheckpointError> {
        let n = self.len(8)?;
        (0..n).map(|_| self.f64()).collect()
    }
    pub fn usizes(&mut self) -> Result<Vec<usize>, CheckpointError> {
        let n = self.len(8)?;
        (0..n).map(|_| self.usize()).collect()
    }
    pub fn u32s(&mut self) -> Result<Vec<u32>, CheckpointError> {
        let n = self.len(4)?;
        (0..n).map(|_| self.u32()).collect()
    }
    pub fn f32s(&mut self) -> Result<Vec<f32>, CheckpointError> {
        let n = self.len(4)?;
        (0..n).map(|_| self.u32().map(f32::from_bits)).collect()
    }
    pub fn i8s(&mut self) -> Result<Vec<i8>, CheckpointError> {
        let n = self.len(1)?;
        Ok(self.bytes(n)?.iter().map(|&b| b as i8).collect())
    }
    pub fn u8s(&mut self) -> Result<Vec<u8>, CheckpointError> {
        let n = self.len(1)?;
        Ok(self.bytes(n)?.to_vec())
    }
    pub fn bools(&mut self) -> Result<Vec<bool>, CheckpointError> {
        let n = self.len(1)?;
        (0..n).map(|_| self.bool()).collect()
    }
    pub fn opt_f64(&mut self) -> Result<Option<f64>, CheckpointError> {
        Ok(if self.bool()? {
            Some(self.f64()?)
        } else {
            None
        })
    }
    pub fn opt_f64s(&mut self) -> Result<Option<Vec<f64>>, CheckpointError> {
        Ok(if self.bool()? {
            Some(self.f64s()?)
        } else {
            None
        })
    }
    /// Errors unless every byte was read.
    pub fn finish(&self) -> Result<(), CheckpointError> {
        match self.remaining() {
            0 => Ok(()),
            extra => Err(CheckpointError::Trailing {
                file: self.file,
                extra,
            }),
        }
    }
}
