//! The float tensors of an ONNX model, read straight from its protobuf bytes.
//!
//! Only what [`SileroRs`](crate::SileroRs) needs to find its weights: every tensor stored in
//! the model, whether as a graph `initializer` or as the `value` of a `Constant` node, in the
//! main graph and in every subgraph (Silero v5/v6 keeps its 16 kHz and 8 kHz weights as
//! `Constant` nodes inside the two branches of an `If`). Nothing is interpreted beyond that: the
//! network itself is written out in Rust, so the graph's nodes are only walked, never run.
//!
//! The fields read, from `onnx.proto` (the numbers are the wire format, stable across ONNX
//! versions):
//!
//! ```text
//! ModelProto      7: graph GraphProto
//! GraphProto      1: node NodeProto*            5: initializer TensorProto*
//! NodeProto       2: output string*   4: op_type string   5: attribute AttributeProto*
//! AttributeProto  1: name string   5: t TensorProto   6: g GraphProto   11: graphs GraphProto*
//! TensorProto     1: dims int64*   2: data_type int32   4: float_data float*   8: name string
//!                 9: raw_data bytes
//! ```
//!
//! Every other field is skipped by its wire type, so a newer ONNX file still reads.

/// `TensorProto.DataType.FLOAT`.
pub(crate) const FLOAT: i32 = 1;

/// Subgraphs deeper than this are refused: a real model nests a few levels (Silero: four),
/// and a corrupt or hostile file must not overflow the stack.
const MAX_DEPTH: usize = 32;

/// One tensor stored in the model, its data still in the file's bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tensor<'a> {
    /// The initializer's name, or the name of the `Constant` node's output.
    pub name: String,
    pub dims: Vec<i64>,
    /// A `TensorProto.DataType` ([`FLOAT`] is the only one [`Tensor::floats`] reads).
    pub data_type: i32,
    /// `raw_data`: little-endian values, packed.
    raw: Option<&'a [u8]>,
    /// `float_data`, for files that store the values as a repeated field instead.
    float_data: Vec<f32>,
}

impl Tensor<'_> {
    /// The values of a float tensor, checked against its dims.
    pub fn floats(&self) -> Result<Vec<f32>, String> {
        if self.data_type != FLOAT {
            return Err(format!(
                "tensor '{}' has data type {}, not float ({FLOAT})",
                self.name, self.data_type
            ));
        }
        let len = self
            .dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
            .ok_or_else(|| format!("tensor '{}' has bad dims {:?}", self.name, self.dims))?;
        let values: Vec<f32> = match self.raw {
            Some(raw) => {
                raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
            None => self.float_data.clone(),
        };
        if values.len() != len || self.raw.is_some_and(|raw| raw.len() % 4 != 0) {
            return Err(format!(
                "tensor '{}' has dims {:?} but {} values (data stored outside the file is not \
                 read)",
                self.name,
                self.dims,
                values.len()
            ));
        }
        Ok(values)
    }
}

/// Every tensor in the ONNX model `bytes`: initializers and `Constant` values, of the main
/// graph and all its subgraphs, in file order.
pub(crate) fn tensors(bytes: &[u8]) -> Result<Vec<Tensor<'_>>, String> {
    let mut out = Vec::new();
    let mut found_graph = false;
    for field in Fields::new(bytes) {
        if let (7, Value::Bytes(graph)) = field? {
            found_graph = true;
            read_graph(graph, 0, &mut out)?;
        }
    }
    if !found_graph {
        return Err("it is not an ONNX model: no graph".to_owned());
    }
    Ok(out)
}

fn read_graph<'a>(bytes: &'a [u8], depth: usize, out: &mut Vec<Tensor<'a>>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("its subgraphs nest deeper than {MAX_DEPTH} levels"));
    }
    for field in Fields::new(bytes) {
        match field? {
            (1, Value::Bytes(node)) => read_node(node, depth, out)?,
            (5, Value::Bytes(tensor)) => out.push(read_tensor(tensor)?),
            _ => {}
        }
    }
    Ok(())
}

/// A `Constant` node's `value` becomes a tensor named for the node's output (what the rest of
/// the graph calls it); the subgraphs of any node (`If`, `Loop`, `Scan`) are read recursively.
fn read_node<'a>(bytes: &'a [u8], depth: usize, out: &mut Vec<Tensor<'a>>) -> Result<(), String> {
    let mut output = None;
    let mut op_type = "";
    let mut attributes = Vec::new();
    for field in Fields::new(bytes) {
        match field? {
            (2, Value::Bytes(name)) if output.is_none() => output = Some(string(name)?),
            (4, Value::Bytes(op)) => op_type = string(op)?,
            (5, Value::Bytes(attribute)) => attributes.push(attribute),
            _ => {}
        }
    }
    for attribute in attributes {
        let mut name = "";
        let mut tensor = None;
        let mut graphs = Vec::new();
        for field in Fields::new(attribute) {
            match field? {
                (1, Value::Bytes(n)) => name = string(n)?,
                (5, Value::Bytes(t)) => tensor = Some(t),
                (6 | 11, Value::Bytes(g)) => graphs.push(g),
                _ => {}
            }
        }
        for graph in graphs {
            read_graph(graph, depth + 1, out)?;
        }
        if let (Some(t), "Constant", "value") = (tensor, op_type, name) {
            let mut t = read_tensor(t)?;
            if let Some(output) = output {
                output.clone_into(&mut t.name);
            }
            out.push(t);
        }
    }
    Ok(())
}

fn read_tensor(bytes: &[u8]) -> Result<Tensor<'_>, String> {
    let mut t = Tensor {
        name: String::new(),
        dims: Vec::new(),
        data_type: 0,
        raw: None,
        float_data: vec![],
    };
    for field in Fields::new(bytes) {
        match field? {
            (1, Value::Varint(d)) => t.dims.push(d as i64),
            // proto2 leaves `dims` unpacked, but writers may pack it (readers must accept both).
            (1, Value::Bytes(packed)) => {
                let mut r = Fields::new(packed);
                while !r.rest.is_empty() {
                    t.dims.push(r.varint()? as i64);
                }
            }
            (2, Value::Varint(dt)) => {
                t.data_type = i32::try_from(dt as i64).map_err(|_| "bad data type".to_owned())?;
            }
            (4, Value::Fixed32(f)) => t.float_data.push(f32::from_bits(f)),
            (4, Value::Bytes(packed)) => {
                if packed.len() % 4 != 0 {
                    return Err("packed float_data is not a whole number of floats".to_owned());
                }
                t.float_data.extend(
                    packed.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                );
            }
            (8, Value::Bytes(name)) => t.name = string(name)?.to_owned(),
            (9, Value::Bytes(raw)) => t.raw = Some(raw),
            _ => {}
        }
    }
    Ok(t)
}

fn string(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|_| "a name in it is not UTF-8".to_owned())
}

/// A field's value, by wire type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// The fields of one protobuf message, in order: `(field number, value)`.
struct Fields<'a> {
    rest: &'a [u8],
    /// Set after an error, so iteration stops there.
    failed: bool,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes, failed: false }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.rest.split_first().ok_or_else(truncated)?;
            self.rest = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("it is not an ONNX model: a number in it is longer than 10 bytes".to_owned())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.rest.len() {
            return Err(truncated());
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    fn field(&mut self) -> Result<(u64, Value<'a>), String> {
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                Value::Fixed64(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| truncated())?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                let b = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            // 3 and 4 are proto2 groups, which ONNX never uses.
            other => {
                return Err(format!("it is not an ONNX model: wire type {other} in it"));
            }
        };
        Ok((key >> 3, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Value<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        let field = self.field();
        self.failed = field.is_err();
        Some(field)
    }
}

fn truncated() -> String {
    "it is not an ONNX model, or it is truncated".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal protobuf writer, to build models by hand.
    #[derive(Default)]
    struct Msg(Vec<u8>);

    impl Msg {
        fn varint(mut self, mut v: u64) -> Self {
            loop {
                let byte = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    self.0.push(byte);
                    return self;
                }
                self.0.push(byte | 0x80);
            }
        }
        fn key(self, field: u64, wire: u64) -> Self {
            self.varint(field << 3 | wire)
        }
        fn int(self, field: u64, v: u64) -> Self {
            self.key(field, 0).varint(v)
        }
        fn bytes(self, field: u64, b: &[u8]) -> Self {
            let mut m = self.key(field, 2).varint(b.len() as u64);
            m.0.extend_from_slice(b);
            m
        }
        fn msg(self, field: u64, m: Msg) -> Self {
            self.bytes(field, &m.0)
        }
        fn float(self, field: u64, f: f32) -> Self {
            let mut m = self.key(field, 5);
            m.0.extend_from_slice(&f.to_le_bytes());
            m
        }
    }

    fn le(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn tensors_are_found_as_initializers_and_constants_in_subgraphs() {
        // An initializer with raw data and unpacked dims, at the top.
        let init = Msg::default()
            .int(1, 2)
            .int(1, 2)
            .int(2, 1)
            .bytes(8, b"top.weight")
            .bytes(9, &le(&[1.0, 2.0, 3.0, -4.5]));
        // A Constant node in a subgraph (an If's then_branch), packed dims and packed
        // float_data, the tensor unnamed: it takes the node's output name.
        let constant = Msg::default().bytes(1, &[3]).int(2, 1).bytes(4, &le(&[0.5, 0.25, -1.0]));
        let value = Msg::default().bytes(1, b"value").msg(5, constant).int(20, 4);
        let node = Msg::default().bytes(2, b"branch.bias").bytes(4, b"Constant").msg(5, value);
        // A float_data field written element by element, and a tensor of another type.
        let unpacked = Msg::default().int(1, 1).int(2, 1).float(4, 7.0).bytes(8, b"one");
        let ints = Msg::default().int(1, 1).int(2, 7).bytes(8, b"ints").bytes(9, &[1, 0, 0, 0]);
        let subgraph = Msg::default().msg(1, node).msg(5, unpacked).bytes(2, b"then");
        let branch = Msg::default().bytes(1, b"then_branch").msg(6, subgraph).int(20, 5);
        let if_node =
            Msg::default().bytes(1, b"cond").bytes(2, b"y").bytes(4, b"If").msg(5, branch);
        // Unknown fields of every wire type are skipped.
        let mut graph = Msg::default().msg(1, if_node).msg(5, init).msg(5, ints).int(99, 5);
        graph = graph.key(98, 1);
        graph.0.extend_from_slice(&[0; 8]);
        let model = Msg::default().int(1, 8).msg(7, graph).bytes(20, b"doc");

        let found = tensors(&model.0).unwrap();
        let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["branch.bias", "one", "top.weight", "ints"]);
        let check = |name: &str, dims: &[i64], values: &[f32]| {
            let t = found.iter().find(|t| t.name == name).unwrap();
            assert_eq!(t.dims, dims, "{name}");
            assert_eq!(t.floats().unwrap(), values, "{name}");
        };
        check("branch.bias", &[3], &[0.5, 0.25, -1.0]);
        check("one", &[1], &[7.0]);
        check("top.weight", &[2, 2], &[1.0, 2.0, 3.0, -4.5]);
        let ints = found.iter().find(|t| t.name == "ints").unwrap();
        assert!(ints.floats().unwrap_err().contains("data type 7, not float"));
    }

    #[test]
    fn a_tensor_whose_data_does_not_match_its_dims_is_refused() {
        let t = Msg::default().int(1, 3).int(2, 1).bytes(8, b"w").bytes(9, &le(&[1.0, 2.0]));
        let model = Msg::default().msg(7, Msg::default().msg(5, t));
        let found = tensors(&model.0).unwrap();
        let err = found[0].floats().unwrap_err();
        assert!(err.contains("tensor 'w' has dims [3] but 2 values"), "{err}");
    }

    #[test]
    fn garbage_and_truncated_files_are_errors_not_panics() {
        let check = |bytes: &[u8], expected: &str| {
            let err = tensors(bytes).unwrap_err();
            assert!(err.contains(expected), "{bytes:?}: {err}");
        };
        check(b"", "no graph");
        check(b"<html>not a model</html>", "not an ONNX model");
        // A graph field whose length runs past the end.
        check(&[7 << 3 | 2, 100, 1, 2], "truncated");
        // A group (wire type 3).
        check(&[1 << 3 | 3], "wire type 3");
        // A varint that never ends.
        check(&[0x80; 11], "longer than 10 bytes");
        // Subgraphs nested without end.
        let mut graph = Msg::default();
        for _ in 0..40 {
            let attribute = Msg::default().bytes(1, b"body").msg(6, graph);
            graph = Msg::default().msg(1, Msg::default().bytes(4, b"Loop").msg(5, attribute));
        }
        check(&Msg::default().msg(7, graph).0, "nest deeper than 32");
    }
}
