//! Speaker identification: telling who is speaking from the sound of their voice. The crate
//! will hold the speaker embeddings (3D-Speaker's CAM++ as ONNX, which
//! `scripts/fetch-speaker-model` installs: one 192-dim vector per utterance, compared by
//! cosine) and the roster of the speakers stt knows. For now it holds their front end.
//!
//! Modules, in reading order:
//!
//! - [`fbank`]: 16 kHz mono samples to the 80-bin Kaldi log mel filterbank features CAM++
//!   takes ([`fbank::Fbank`]), and the normalisation it expects on top of them
//!   ([`fbank::subtract_mean`]). Checked against Kaldi's own algorithm as kaldi-native-fbank
//!   implements it (`tests/fbank.rs`).

pub mod fbank;
