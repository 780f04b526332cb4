//! Speaker identification: telling who is speaking from the sound of their voice. The crate
//! holds the speaker embeddings (3D-Speaker's CAM++ as ONNX, which
//! `scripts/fetch-speaker-model` installs: one 192-dim vector per utterance, compared by
//! cosine), their front end, and the roster of the speakers stt knows.
//!
//! Modules, in reading order:
//!
//! - [`fbank`]: 16 kHz mono samples to the 80-bin Kaldi log mel filterbank features CAM++
//!   takes ([`fbank::Fbank`]), and the normalisation it expects on top of them
//!   ([`fbank::subtract_mean`]). Checked against Kaldi's own algorithm as kaldi-native-fbank
//!   implements it (`tests/fbank.rs`).
//! - [`embed`]: a segment of speech to its unit-length 192-dim embedding with CAM++ in ONNX
//!   Runtime ([`embed::Embedder`]), long segments in windows, and [`embed::cosine`] to
//!   compare two. Checked on espeak-ng voices with the installed model (`tests/embed.rs`).
//! - [`roster`]: who spoke, from an embedding: matched, uncertain or a new speaker minted;
//!   prototypes that adapt, confirmation, pruning, names, forget and merge, and the files
//!   they are kept in ([`roster::Roster`]).

pub mod embed;
pub mod fbank;
pub mod roster;
