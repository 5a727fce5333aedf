//! The few protobuf messages a send-only Yuanbao client speaks, encoded and decoded by
//! hand (varints and length-delimited fields, as Hermes' own codec does): the `ConnMsg`
//! envelope and its head, `AuthBindReq`/`AuthBindRsp` and the C2C and group text
//! requests with their answers. It never panics on what the gateway sends: a malformed
//! frame decodes to `None`.

/// `ConnMsg.Head.cmd_type`: a request going up and the gateway's response to it.
pub const REQUEST: u64 = 0;
pub const RESPONSE: u64 = 1;

/// Hermes' instance id in `DeviceInfo`.
const INSTANCE_ID: &str = "17";
/// The business module of message requests.
pub const BIZ_MODULE: &str = "yuanbao_openclaw_proxy";

const VARINT: u8 = 0;
const LEN: u8 = 2;

fn varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn key(field: u32, wire: u8, out: &mut Vec<u8>) {
    varint((u64::from(field) << 3) | u64::from(wire), out);
}

fn bytes_field(field: u32, value: &[u8], out: &mut Vec<u8>) {
    key(field, LEN, out);
    varint(value.len() as u64, out);
    out.extend_from_slice(value);
}

/// A string field, left out when empty (proto3 defaults are not written).
fn string_field(field: u32, value: &str, out: &mut Vec<u8>) {
    if !value.is_empty() {
        bytes_field(field, value.as_bytes(), out);
    }
}

fn varint_field(field: u32, value: u64, out: &mut Vec<u8>) {
    if value != 0 {
        key(field, VARINT, out);
        varint(value, out);
    }
}

/// One decoded field: a varint or a length-delimited value (fixed 32/64-bit fields are
/// skipped, none of ours uses them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn read_varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Every field of a message, in order; `None` when the bytes are not protobuf.
pub fn fields(data: &[u8]) -> Option<Vec<(u32, Value<'_>)>> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < data.len() {
        let tag = read_varint(data, &mut pos)?;
        let field = u32::try_from(tag >> 3).ok()?;
        match tag & 7 {
            0 => out.push((field, Value::Varint(read_varint(data, &mut pos)?))),
            1 => pos = pos.checked_add(8)?,
            2 => {
                let len = usize::try_from(read_varint(data, &mut pos)?).ok()?;
                let end = pos.checked_add(len).filter(|end| *end <= data.len())?;
                out.push((field, Value::Bytes(&data[pos..end])));
                pos = end;
            }
            5 => pos = pos.checked_add(4)?,
            _ => return None,
        }
    }
    (pos == data.len()).then_some(out)
}

fn get_bytes<'a>(fields: &[(u32, Value<'a>)], field: u32) -> &'a [u8] {
    fields
        .iter()
        .find_map(|(f, v)| match v {
            Value::Bytes(b) if *f == field => Some(*b),
            _ => None,
        })
        .unwrap_or(&[])
}

fn get_string(fields: &[(u32, Value<'_>)], field: u32) -> String {
    String::from_utf8_lossy(get_bytes(fields, field)).into_owned()
}

fn get_varint(fields: &[(u32, Value<'_>)], field: u32) -> u64 {
    fields
        .iter()
        .find_map(|(f, v)| match v {
            Value::Varint(n) if *f == field => Some(*n),
            _ => None,
        })
        .unwrap_or(0)
}

/// `ConnMsg.Head`: 1 cmd_type, 2 cmd, 3 seq_no, 4 msg_id, 5 module, 10 status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    pub cmd_type: u64,
    pub cmd: String,
    pub seq_no: u64,
    pub msg_id: String,
    pub module: String,
    pub status: u64,
}

/// A `ConnMsg` (1 head, 2 data) carrying `data`.
pub fn conn_msg(head: &Head, data: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    varint_field(1, head.cmd_type, &mut h);
    string_field(2, &head.cmd, &mut h);
    varint_field(3, head.seq_no, &mut h);
    string_field(4, &head.msg_id, &mut h);
    string_field(5, &head.module, &mut h);
    varint_field(10, head.status, &mut h);
    let mut out = Vec::new();
    bytes_field(1, &h, &mut out);
    if !data.is_empty() {
        bytes_field(2, data, &mut out);
    }
    out
}

/// The head and data of a `ConnMsg`.
pub fn decode_conn_msg(frame: &[u8]) -> Option<(Head, Vec<u8>)> {
    let outer = fields(frame)?;
    let head = fields(get_bytes(&outer, 1))?;
    let head = Head {
        cmd_type: get_varint(&head, 1),
        cmd: get_string(&head, 2),
        seq_no: get_varint(&head, 3),
        msg_id: get_string(&head, 4),
        module: get_string(&head, 5),
        status: get_varint(&head, 10),
    };
    Some((head, get_bytes(&outer, 2).to_vec()))
}

/// What signing in gives: the token, and the bot's account and source.
pub struct Login<'a> {
    pub uid: &'a str,
    pub source: &'a str,
    pub token: &'a str,
    pub route_env: &'a str,
    pub version: &'a str,
}

/// `AuthBindReq`: 1 biz_id "ybBot", 2 AuthInfo (uid, source, token), 3 DeviceInfo
/// (1 app_version, 2 operating system, 10 instance id, 24 bot_version), 5 env_name.
pub fn auth_bind(login: &Login<'_>) -> Vec<u8> {
    let mut auth = Vec::new();
    bytes_field(1, login.uid.as_bytes(), &mut auth);
    bytes_field(2, login.source.as_bytes(), &mut auth);
    bytes_field(3, login.token.as_bytes(), &mut auth);
    let mut device = Vec::new();
    string_field(1, login.version, &mut device);
    string_field(2, std::env::consts::OS, &mut device);
    string_field(10, INSTANCE_ID, &mut device);
    string_field(24, login.version, &mut device);
    let mut req = Vec::new();
    bytes_field(1, b"ybBot", &mut req);
    bytes_field(2, &auth, &mut req);
    bytes_field(3, &device, &mut req);
    string_field(5, login.route_env, &mut req);
    req
}

/// A `TIMTextElem` message body element: 1 msg_type, 2 MsgContent (1 text).
fn text_element(text: &str) -> Vec<u8> {
    let mut content = Vec::new();
    string_field(1, text, &mut content);
    let mut element = Vec::new();
    string_field(1, "TIMTextElem", &mut element);
    bytes_field(2, &content, &mut element);
    element
}

/// `SendC2CMessageReq` (1 msg_id, 2 to_account, 3 from_account, 5 msg_body) or
/// `SendGroupMessageReq` (1 msg_id, 2 group_code, 3 from_account, 6 msg_body).
pub fn send_text(group: bool, to: &str, from: &str, msg_id: &str, text: &str) -> Vec<u8> {
    let mut req = Vec::new();
    string_field(1, msg_id, &mut req);
    bytes_field(2, to.as_bytes(), &mut req);
    string_field(3, from, &mut req);
    bytes_field(if group { 6 } else { 5 }, &text_element(text), &mut req);
    req
}

/// The `code` (1) and `message` (2) that start `AuthBindRsp` and the send answers, and
/// `AuthBindRsp`'s connect id (3).
pub fn code_message(data: &[u8]) -> Option<(u64, String, String)> {
    let fields = fields(data)?;
    Some((
        get_varint(&fields, 1),
        get_string(&fields, 2),
        get_string(&fields, 3),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_and_garbage_is_refused() {
        let head = Head {
            cmd_type: RESPONSE,
            cmd: "send_c2c_message".into(),
            seq_no: 300,
            msg_id: "c2c_7".into(),
            module: BIZ_MODULE.into(),
            status: 0,
        };
        let frame = conn_msg(&head, &[8, 1]);
        assert_eq!(decode_conn_msg(&frame), Some((head, vec![8, 1])));
        assert_eq!(decode_conn_msg(&[0x0a, 0x05, 1]), None);
        assert_eq!(fields(&[0xff; 11]), None);
    }

    #[test]
    fn the_text_request_has_hermes_fields() {
        let req = send_text(false, "10001", "bot", "c2c_1", "hi");
        let f = fields(&req).unwrap_or_default();
        assert_eq!(get_string(&f, 2), "10001");
        assert_eq!(get_string(&f, 3), "bot");
        let element = fields(get_bytes(&f, 5)).unwrap_or_default();
        assert_eq!(get_string(&element, 1), "TIMTextElem");
        let content = fields(get_bytes(&element, 2)).unwrap_or_default();
        assert_eq!(get_string(&content, 1), "hi");
    }
}
