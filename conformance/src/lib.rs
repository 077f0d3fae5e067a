//! tc-conformance: drives tc-model and tc-gate with one action vocabulary and compares them.
