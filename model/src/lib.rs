//! tc-model: the pure state machine of the confirmation gate and its stateright model.
