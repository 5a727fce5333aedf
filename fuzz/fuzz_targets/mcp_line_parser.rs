//! The MCP server's stdio framing (`src/mcp_server/lines.rs`, compiled here as it is):
//! any byte stream from a client. Checks that nothing panics; that the SDK gets exactly
//! the lines that are JSON (or blank), in order and whole; and that the client gets one
//! JSON-RPC parse error (-32700, id null) per other line and nothing else.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::runtime::Runtime;

#[path = "../../src/mcp_server/lines.rs"]
mod lines;

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    // The lines as the framing reads them: up to and with each newline.
    let mut forwarded = Vec::new();
    let mut refused = 0usize;
    for line in data.split_inclusive(|b| *b == b'\n') {
        match lines::judge(line) {
            Ok(()) => {
                forwarded.extend_from_slice(line);
                if line.last() != Some(&b'\n') {
                    forwarded.push(b'\n');
                }
            }
            Err(_) => refused += 1,
        }
    }
    let input = std::io::Cursor::new(data.to_vec());
    runtime().block_on(async {
        let (client_out, mut written) = tokio::io::duplex(1 << 20);
        let ((mut sdk_reads, sdk_writes), framing) = lines::frame(input, client_out);
        let mut seen = Vec::new();
        sdk_reads
            .read_to_end(&mut seen)
            .await
            .expect("the SDK's side reads");
        assert_eq!(
            seen, forwarded,
            "the SDK got other lines than the JSON ones: {data:?}"
        );
        drop(sdk_writes);
        framing.finish().await;
        let mut answers = String::new();
        written
            .read_to_string(&mut answers)
            .await
            .expect("answers are UTF-8");
        let answers: Vec<&str> = answers.lines().collect();
        assert_eq!(answers.len(), refused, "one parse error per bad line: {data:?}");
        for answer in answers {
            let answer: Value = serde_json::from_str(answer).expect("an answer is JSON");
            assert_eq!(answer["jsonrpc"], "2.0");
            assert_eq!(answer["id"], Value::Null);
            assert_eq!(answer["error"]["code"], -32700);
        }
    });
});
