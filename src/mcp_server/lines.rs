//! The stdio framing in front of the SDK: a line from the client that is not JSON is
//! answered with a JSON-RPC parse error (-32700, id null), as JSON-RPC 2.0 asks, where
//! the SDK would drop it without a word; every other line reaches the SDK unchanged, and
//! one task alone writes stdout, so an answer never interleaves with another. It never
//! reads what a message says.

use std::time::Duration;

use serde_json::json;
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest line read (the SDK's own default bound): a longer one is answered as
/// unparsable and skipped.
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// Room in each pipe between the framing and the SDK.
const PIPE: usize = 64 * 1024;

/// The two tasks that carry the client's lines to the SDK and the answers back.
pub struct Framing {
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Framing {
    /// After the SDK stopped: answers it wrote still reach stdout (for at most two
    /// seconds), and the client is no longer read.
    pub async fn finish(self) {
        self.reader.abort();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.writer).await;
    }
}

/// The parse error a line that is not JSON gets.
pub fn parse_error(reason: &str) -> String {
    let answer = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {reason}")},
    });
    format!("{answer}\n")
}

/// Frames `input` and `output` (the client's stdin and stdout); returns the SDK's side
/// (what it reads, what it writes) and the tasks doing it.
pub fn frame<R, W>(input: R, output: W) -> ((DuplexStream, DuplexStream), Framing)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_sdk, sdk_reads) = tokio::io::duplex(PIPE);
    let (sdk_writes, from_sdk) = tokio::io::duplex(PIPE);
    let (errors, error_lines) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_client(input, to_sdk, errors));
    let writer = tokio::spawn(write_client(output, from_sdk, error_lines));
    ((sdk_reads, sdk_writes), Framing { reader, writer })
}

/// Reads the client's lines: JSON goes to the SDK, anything else gets a parse error.
/// The client closing its end closes the SDK's.
async fn read_client<R: AsyncRead + Unpin>(
    input: R,
    mut to_sdk: DuplexStream,
    errors: mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = AsyncReadExt::take(&mut input, MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
            // Skip the rest of the oversized line.
            let mut rest = Vec::new();
            let _ = input.read_until(b'\n', &mut rest).await;
            let _ = errors.send(parse_error("the line is longer than 16 MiB"));
            continue;
        }
        match judge(&line) {
            Ok(()) => {
                if to_sdk.write_all(&line).await.is_err() {
                    break;
                }
                if line.last() != Some(&b'\n') && to_sdk.write_all(b"\n").await.is_err() {
                    break;
                }
            }
            Err(reason) => {
                let _ = errors.send(parse_error(&reason));
            }
        }
    }
    let _ = to_sdk.shutdown().await;
}

/// `Err` with the reason when `line` is not JSON. A blank line is let through (the
/// SDK skips it), and so is well-formed JSON of any shape: whether it is a message is
/// the SDK's to answer (-32600).
pub fn judge(line: &[u8]) -> Result<(), String> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(text)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Writes the SDK's answers and the parse errors to the client, each line whole.
async fn write_client<W: AsyncWrite + Unpin>(
    mut output: W,
    from_sdk: DuplexStream,
    mut errors: mpsc::UnboundedReceiver<String>,
) {
    let mut from_sdk = BufReader::new(from_sdk);
    // Kept across iterations: a read cut short by the other branch resumes into it.
    let mut answer = Vec::new();
    let mut sdk_open = true;
    loop {
        tokio::select! {
            read = from_sdk.read_until(b'\n', &mut answer), if sdk_open => match read {
                Ok(0) | Err(_) => sdk_open = false,
                Ok(_) => {
                    if output.write_all(&answer).await.is_err() || output.flush().await.is_err() {
                        return;
                    }
                    answer.clear();
                }
            },
            error = errors.recv() => match error {
                Some(error) => {
                    if output.write_all(error.as_bytes()).await.is_err()
                        || output.flush().await.is_err()
                    {
                        return;
                    }
                }
                None if !sdk_open => break,
                None => {
                    // The reader is gone; only the SDK's answers are left to write.
                    while let Ok(n) = from_sdk.read_until(b'\n', &mut answer).await {
                        if n == 0 || output.write_all(&answer).await.is_err() {
                            break;
                        }
                        answer.clear();
                    }
                    break;
                }
            },
        }
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_that_are_not_json_are_judged_unparsable() {
        for ok in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"[..],
            b"[1, 2]\r\n",
            b"\xEF\xBB\xBF{}\n",
            b"   \n",
            b"{\"not\": \"a message\"}",
        ] {
            assert_eq!(judge(ok), Ok(()), "{:?}", String::from_utf8_lossy(ok));
        }
        for bad in [
            &b"{\"jsonrpc\": \n"[..],
            b"hello\n",
            b"{} {}\n",
            b"\xFF\xFE\n",
        ] {
            assert!(judge(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[tokio::test]
    async fn a_bad_line_is_answered_and_good_ones_pass_in_order() {
        let (client_in, server_in) = tokio::io::duplex(1024);
        let (server_out, client_out) = tokio::io::duplex(1024);
        let ((mut sdk_reads, mut sdk_writes), framing) = frame(server_in, server_out);
        let mut client_in = client_in;
        client_in
            .write_all(b"{\"a\":1}\nnot json\n{\"b\":2}\n")
            .await
            .unwrap();
        drop(client_in);
        let mut seen = String::new();
        AsyncReadExt::read_to_string(&mut sdk_reads, &mut seen)
            .await
            .unwrap();
        assert_eq!(seen, "{\"a\":1}\n{\"b\":2}\n");
        sdk_writes.write_all(b"{\"answer\":1}\n").await.unwrap();
        drop(sdk_writes);
        framing.finish().await;
        let mut written = String::new();
        AsyncReadExt::read_to_string(&mut BufReader::new(client_out), &mut written)
            .await
            .unwrap();
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 2, "{written}");
        assert!(lines.contains(&"{\"answer\":1}"), "{written}");
        let error: serde_json::Value =
            serde_json::from_str(lines.iter().find(|l| l.contains("-32700")).unwrap()).unwrap();
        assert_eq!(error["id"], serde_json::Value::Null);
        assert_eq!(error["error"]["code"], -32700);
    }
}
