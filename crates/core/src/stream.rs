//! The answer as the backend produces it (docs/CONTRACT.md §10): backends send text to a
//! [`ChunkSink`]; a streaming caller reads it from the [`ChunkSource`]. At most
//! [`MAX_UNREAD_BYTES`] of text wait unread: past that, `send` waits, so the backend stops reading
//! its pipe or HTTP body until the consumer catches up. `relay()` gives backends a sink that keeps
//! nothing, so the streaming and the non-streaming call run the same backend code. A stream
//! passes at most [`MAX_OUTPUT_BYTES`] of text in all: the chunk that would go past it is held
//! back, and [`ChunkSink::past_limit`] tells the call to stop the backend and fail (the
//! consumer of a 50 MB answer gets 8 MiB, not 50).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::limits::MAX_OUTPUT_BYTES;

/// Text a streaming call holds for its consumer before the backend is paused.
pub const MAX_UNREAD_BYTES: usize = 1024 * 1024;

/// One piece of the answer, as produced; it holds its share of the unread budget until read.
#[derive(Debug)]
pub struct Chunk {
    pub text: String,
    _budget: Option<OwnedSemaphorePermit>,
}

/// Where a backend sends its text; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ChunkSink {
    /// `None`: nobody streams this call.
    channel: Option<Channel>,
}

#[derive(Debug, Clone)]
struct Channel {
    sender: mpsc::UnboundedSender<Chunk>,
    budget: Arc<Semaphore>,
    /// Whether any text was sent, by any clone.
    sent: Arc<AtomicBool>,
    /// Bytes of text offered so far, by every clone, the chunk held back included.
    offered: Arc<AtomicU64>,
    /// Cancelled once a chunk would take the stream past [`MAX_OUTPUT_BYTES`].
    past_limit: CancellationToken,
}

/// What a streaming caller reads.
#[derive(Debug)]
pub struct ChunkSource {
    receiver: mpsc::UnboundedReceiver<Chunk>,
}

/// A connected sink and source.
pub fn chunk_channel() -> (ChunkSink, ChunkSource) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let budget = Arc::new(Semaphore::new(MAX_UNREAD_BYTES));
    let sink = ChunkSink {
        channel: Some(Channel {
            sender,
            budget,
            sent: Arc::default(),
            offered: Arc::default(),
            past_limit: CancellationToken::new(),
        }),
    };
    (sink, ChunkSource { receiver })
}

impl ChunkSink {
    /// A sink that keeps nothing (`relay()` without `onChunk`).
    pub fn discard() -> ChunkSink {
        ChunkSink::default()
    }

    /// Whether anybody reads what is sent (a backend may skip work that only feeds the stream).
    pub fn is_streaming(&self) -> bool {
        self.channel
            .as_ref()
            .is_some_and(|channel| !channel.sender.is_closed())
    }

    /// Whether any text went to the consumer.
    pub fn has_sent(&self) -> bool {
        self.channel
            .as_ref()
            .is_some_and(|channel| channel.sent.load(Ordering::Relaxed))
    }

    /// Resolves, with the bytes offered so far, once the stream went past [`MAX_OUTPUT_BYTES`];
    /// never for a sink that keeps nothing.
    pub async fn past_limit(&self) -> u64 {
        match &self.channel {
            Some(channel) => {
                channel.past_limit.cancelled().await;
                channel.offered.load(Ordering::Relaxed)
            }
            None => std::future::pending().await,
        }
    }

    /// Sends `text`, first waiting while the consumer has [`MAX_UNREAD_BYTES`] unread. Empty
    /// text is not sent, nor anything once the stream would go past [`MAX_OUTPUT_BYTES`]. Once
    /// the consumer has gone, this returns at once.
    pub async fn send(&self, text: String) {
        let Some(channel) = &self.channel else {
            return;
        };
        if text.is_empty() || channel.sender.is_closed() || channel.past_limit.is_cancelled() {
            return;
        }
        let offered = channel
            .offered
            .fetch_add(text.len() as u64, Ordering::Relaxed);
        if offered + text.len() as u64 > MAX_OUTPUT_BYTES as u64 {
            channel.past_limit.cancel();
            return;
        }
        // A chunk larger than the whole budget takes all of it: it waits for an empty queue.
        let cost = u32::try_from(text.len().min(MAX_UNREAD_BYTES)).unwrap_or(u32::MAX);
        let budget = tokio::select! {
            permit = Arc::clone(&channel.budget).acquire_many_owned(cost) => permit.ok(),
            () = channel.sender.closed() => return,
        };
        channel.sent.store(true, Ordering::Relaxed);
        let _ = channel.sender.send(Chunk {
            text,
            _budget: budget,
        });
    }
}

impl ChunkSource {
    /// The next chunk; `None` once every sink is gone (the run ended).
    pub async fn next(&mut self) -> Option<Chunk> {
        self.receiver.recv().await
    }

    /// Chunks already waiting, without waiting for more.
    pub fn try_next(&mut self) -> Option<Chunk> {
        self.receiver.try_recv().ok()
    }
}

/// Equal when both are the same stream (or both discard), so requests stay comparable.
impl PartialEq for ChunkSink {
    fn eq(&self, other: &Self) -> bool {
        match (&self.channel, &other.channel) {
            (None, None) => true,
            (Some(a), Some(b)) => a.sender.same_channel(&b.sender),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn chunks_arrive_in_order_and_end_when_the_sinks_are_gone() {
        let (sink, mut source) = chunk_channel();
        let producer = tokio::spawn(async move {
            for text in ["a", "", "bc", "d"] {
                sink.send(text.to_string()).await;
            }
        });
        let mut seen = Vec::new();
        while let Some(chunk) = source.next().await {
            seen.push(chunk.text);
        }
        producer.await.expect("producer");
        assert_eq!(seen, ["a", "bc", "d"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_consumer_that_does_not_read_pauses_the_producer_at_one_mib() {
        let (sink, mut source) = chunk_channel();
        let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let producer = tokio::spawn({
            let sent = Arc::clone(&sent);
            async move {
                for _ in 0..64 {
                    sink.send("x".repeat(64 * 1024)).await;
                    sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        // 16 chunks of 64 KiB fill the budget; the 17th waits.
        assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 16);
        assert!(!producer.is_finished());
        // Reading one chunk lets exactly one more in.
        let first = source.next().await.expect("a chunk");
        drop(first);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 17);
        drop(source);
        // A consumer that is gone releases the producer at once.
        tokio::time::timeout(Duration::from_secs(1), producer)
            .await
            .expect("producer released")
            .expect("producer");
    }

    /// Sends 100 MiB, one MiB at a time; `false` when a send still waits after a (paused) second.
    async fn sends_100_mib(sink: &ChunkSink) -> bool {
        let sends = async {
            for _ in 0..100 {
                sink.send("y".repeat(1024 * 1024)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(1), sends)
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_stream_passes_at_most_the_output_limit_then_says_so() {
        let (sink, mut source) = chunk_channel();
        let producer = tokio::spawn({
            let sink = sink.clone();
            async move {
                for _ in 0..20 {
                    sink.send("z".repeat(1024 * 1024)).await;
                }
            }
        });
        let mut received = 0;
        let mut chunks = 0;
        while chunks < 8 {
            received += source.next().await.expect("a chunk").text.len();
            chunks += 1;
        }
        assert_eq!(received, MAX_OUTPUT_BYTES);
        // The ninth MiB is held back: the sink says the stream went past the limit.
        let offered = sink.past_limit().await;
        assert_eq!(offered, MAX_OUTPUT_BYTES as u64 + 1024 * 1024);
        producer.await.expect("producer");
        drop(sink);
        assert!(source.next().await.is_none(), "nothing past the limit");
    }

    #[tokio::test(start_paused = true)]
    async fn a_discarding_sink_keeps_nothing_and_never_waits() {
        let sink = ChunkSink::discard();
        assert!(!sink.is_streaming());
        assert!(sends_100_mib(&sink).await, "a discarding sink never waits");
        assert!(!sink.has_sent());
        // The same sends to a stream nobody reads wait once a MiB is unread: what the discarding
        // sink is spared.
        let (streaming, _source) = chunk_channel();
        assert!(streaming.is_streaming());
        assert!(!sends_100_mib(&streaming).await);
        assert!(streaming.has_sent());
        // Equal only to itself: another stream, or discarding, is another sink.
        assert_eq!(streaming, streaming.clone());
        assert_ne!(streaming, chunk_channel().0);
        assert_ne!(streaming, sink);
    }
}
