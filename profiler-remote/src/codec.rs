//! The protobuf codec of the generated stubs: prost's, except that a message that does
//! not decode is the sender's mistake.
//!
//! tonic's prost codec answers an undecodable request body with INTERNAL, as gRPC's
//! status code table lists parse errors; but INTERNAL tells a client the server broke,
//! where it was sent bytes that are not the message (a fuzzer, a client of another
//! protocol version, a proxy that mangled the body). prof's server answers
//! INVALID_ARGUMENT, with prost's words for what failed to decode.

use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::{Code, Status};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// [`ProstCodec`] with decoding errors as INVALID_ARGUMENT (the generated stubs name
/// it in `build.rs`).
#[derive(Debug, Clone)]
pub(crate) struct Protobuf<T, U> {
    _messages: PhantomData<(T, U)>,
}

impl<T, U> Default for Protobuf<T, U> {
    fn default() -> Self {
        Protobuf {
            _messages: PhantomData,
        }
    }
}

impl<T, U> Codec for Protobuf<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = InvalidArgument<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::default().encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        InvalidArgument(ProstCodec::<T, U>::default().decoder())
    }
}

/// A prost decoder whose decoding errors are INVALID_ARGUMENT.
#[derive(Debug, Clone)]
pub(crate) struct InvalidArgument<U>(ProstDecoder<U>);

impl<U: prost::Message + Default> Decoder for InvalidArgument<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        // prost's message names the message and field that failed to decode.
        self.0.decode(buf).map_err(|status| match status.code() {
            Code::Internal => Status::invalid_argument(status.message()),
            _ => status,
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
