//! The one sender interface: what a platform is, as data ([`Description`]: its
//! variables, home channel, text limit and markup, attachments, pacing), the requests it
//! makes ([`Sender`]: one text part, one file), and the one driver ([`send_chat`]) that
//! owns the rest — the parts a message is cut into, which of them an earlier attempt
//! already delivered, attachments, chat names, and reporting what went out. A sender
//! never loops over parts, never skips, and never retries outside [`super::http`].

use std::path::Path;

use jobs::target::Platform;

use super::format::{render, split_parts, utf16_len, Part, Rendering};
use super::http::{Failure, Link, Pace, Pacing};
use super::{platforms, Message, Shared};
use crate::BoxFuture;
use foundation::environment::Environment;

/// What a request of a sender comes to.
pub type Sending<'a> = BoxFuture<'a, Result<(), Failure>>;
/// A sender opened for one destination.
pub type Opened<'a> = BoxFuture<'a, Result<Box<dyn Sender + 'a>, Failure>>;

/// A platform's requests for one destination, opened by its [`Description::open`]. The
/// driver calls [`Sender::text`] for each part still to deliver, in order, then
/// [`Sender::file`] for each attachment, and [`Sender::close`] at the end. `item` is the
/// item's place in the whole message (parts first, then files), as the outbox counts.
pub trait Sender: Send {
    /// Sends one part of the text.
    fn text<'a>(&'a mut self, item: usize, part: &'a Part) -> Sending<'a>;

    /// Sends one `MEDIA:` file; only called when the platform's [`Attachments`] are
    /// [`Attachments::Sent`].
    fn file<'a>(&'a mut self, _item: usize, path: &'a Path) -> Sending<'a> {
        let refused = format!("MEDIA file {} cannot be sent here", path.display());
        Box::pin(async move { Err(Failure::Final(refused)) })
    }

    /// Ends the destination's send (a WebSocket says goodbye).
    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Everything a sender is opened with for one destination.
pub struct Open<'a> {
    pub env: &'a Environment,
    /// The values of [`Description::required`], in that order (URLs without a trailing
    /// slash).
    pub settings: Vec<&'a str>,
    /// [`Description::base`] as set, else its default, without a trailing slash.
    pub base: &'a str,
    /// The chat id (a channel name already resolved).
    pub chat: &'a str,
    pub thread: Option<&'a str>,
    /// The message as the driver got it (a caption may ride on a file).
    pub text: &'a str,
    pub media: &'a [String],
    /// Send without a notification, where the platform has a way to
    /// (`cron.delivery.notify: false`).
    pub silent: bool,
    /// The way to the platform: the shared exchange, paced by the description.
    pub link: Link<'a>,
}

/// The variable that moves a platform's API (tests and self-hosted servers), and where
/// it points when unset.
#[derive(Debug, Clone, Copy)]
pub struct Base {
    pub var: &'static str,
    pub default: &'static str,
}

/// Where a platform's home channel is set, as Python Hermes names it
/// (`_HOME_TARGET_ENV_VARS`).
#[derive(Debug, Clone, Copy)]
pub struct Home {
    pub var: &'static str,
    /// A former name still read when `var` is unset.
    pub former: Option<&'static str>,
    /// A thread variable read before `<var>_THREAD_ID`.
    pub cron_thread: Option<&'static str>,
}

impl Home {
    pub const fn var(var: &'static str) -> Home {
        Home {
            var,
            former: None,
            cron_thread: None,
        }
    }
}

/// How a platform measures a message's length.
#[derive(Debug, Clone, Copy)]
pub enum Measure {
    Chars,
    /// UTF-16 code units (Telegram).
    Utf16,
}

impl Measure {
    fn of(self, text: &str) -> usize {
        match self {
            Measure::Chars => text.chars().count(),
            Measure::Utf16 => utf16_len(text),
        }
    }
}

/// How a reply becomes the parts a platform is sent. Parts are a pure function of the
/// text (and the files): the outbox resumes a half-sent message by their count.
#[derive(Clone, Copy)]
pub enum Text {
    /// Rendered in the platform's markup and split on its blocks to `limit`.
    Split {
        rendering: Rendering,
        limit: usize,
        measure: Measure,
    },
    /// The platform's own cut (bubbles, captions, a rendering of its own).
    Own(fn(&str, &[String]) -> Vec<Part>),
}

/// What becomes of a reply's `MEDIA:` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attachments {
    /// Each file is an item of its own, after the parts ([`Sender::file`]).
    Sent,
    /// The sender carries them on its parts (every file on the last email).
    OnParts,
    /// The platform cannot take them: each path is named at the end of the text, as
    /// `(attachment <this>: <path>)`.
    Named(&'static str),
}

/// One platform, as data: what it needs, how its text is cut, what it does with files,
/// how fast it may be sent to, and how its sender is opened.
pub struct Description {
    pub platform: Platform,
    /// The variables its sender needs, every one of them, as Python Hermes names them;
    /// doctor names the missing ones.
    pub required: &'static [&'static str],
    /// Another name a required variable is read under (`YUANBAO_APP_KEY`).
    pub aliases: &'static [(&'static str, &'static str)],
    pub base: Option<Base>,
    /// `None`: targets on it are explicit, there is no home channel.
    pub home: Option<Home>,
    /// The sigil that marks a channel name (rather than an id) to resolve before
    /// sending (`#general`).
    pub sigil: Option<char>,
    pub text: Text,
    pub attachments: Attachments,
    /// How the items of one chat are spaced.
    pub pacing: Option<Pacing>,
    pub open: for<'a> fn(Open<'a>) -> Opened<'a>,
}

/// Builds a description in a platform's module: what is not said is the default (no
/// variables, no other names, no base variable, no home channel, no channel names, Markdown as
/// written in parts of 4096 characters, files sent, no pacing).
impl Description {
    pub const fn new(platform: Platform, open: for<'a> fn(Open<'a>) -> Opened<'a>) -> Description {
        Description {
            platform,
            required: &[],
            aliases: &[],
            base: None,
            home: None,
            sigil: None,
            text: Text::Split {
                rendering: Rendering::Markdown,
                limit: 4096,
                measure: Measure::Chars,
            },
            attachments: Attachments::Sent,
            pacing: None,
            open,
        }
    }

    pub const fn needs(self, required: &'static [&'static str]) -> Description {
        Description { required, ..self }
    }

    pub const fn aliases(self, aliases: &'static [(&'static str, &'static str)]) -> Description {
        Description { aliases, ..self }
    }

    pub const fn base(self, var: &'static str, default: &'static str) -> Description {
        let base = Some(Base { var, default });
        Description { base, ..self }
    }

    pub const fn home(self, home: Home) -> Description {
        Description {
            home: Some(home),
            ..self
        }
    }

    pub const fn names(self, sigil: char) -> Description {
        Description {
            sigil: Some(sigil),
            ..self
        }
    }

    /// Parts rendered in `rendering`, of at most `limit` characters.
    pub const fn split(self, rendering: Rendering, limit: usize) -> Description {
        let measure = Measure::Chars;
        let text = Text::Split {
            rendering,
            limit,
            measure,
        };
        Description { text, ..self }
    }

    /// Parts measured as the platform counts (after [`Description::split`]).
    pub const fn measured(self, measure: Measure) -> Description {
        let text = match self.text {
            Text::Split {
                rendering, limit, ..
            } => Text::Split {
                rendering,
                limit,
                measure,
            },
            own => own,
        };
        Description { text, ..self }
    }

    /// Parts cut by the platform's own rules.
    pub const fn cut(self, cut: fn(&str, &[String]) -> Vec<Part>) -> Description {
        let text = Text::Own(cut);
        Description { text, ..self }
    }

    pub const fn attachments(self, attachments: Attachments) -> Description {
        Description {
            attachments,
            ..self
        }
    }

    pub const fn paced(self, pacing: Pacing) -> Description {
        Description {
            pacing: Some(pacing),
            ..self
        }
    }

    /// The parts a message's text is sent in.
    pub fn parts(&self, text: &str, media: &[String]) -> Vec<Part> {
        let (rendering, limit, measure) = match self.text {
            Text::Own(cut) => return cut(text, media),
            Text::Split {
                rendering,
                limit,
                measure,
            } => (rendering, limit, measure),
        };
        let text = self.with_names(text, media);
        let blank = match rendering {
            Rendering::Plain => render(&text, rendering).trim().is_empty(),
            _ => text.trim().is_empty(),
        };
        if blank {
            return Vec::new();
        }
        split_parts(&text, rendering, limit, &|s| measure.of(s))
    }

    /// The text with each file it cannot take named at its end ([`Attachments::Named`]);
    /// an own cut ([`Text::Own`]) calls it where its rendering wants the names.
    pub fn with_names(&self, text: &str, media: &[String]) -> String {
        let mut text = text.to_string();
        if let Attachments::Named(how) = self.attachments {
            for path in media {
                text.push_str(&format!("\n(attachment {how}: {path})"));
            }
        }
        text
    }

    /// The files sent as items of their own.
    fn files<'m>(&self, media: &'m [String]) -> &'m [String] {
        match self.attachments {
            Attachments::Sent => media,
            Attachments::OnParts | Attachments::Named(_) => &[],
        }
    }
}

/// A sender opened without a request of its own.
pub fn ready<'a>(sender: impl Sender + 'a) -> Opened<'a> {
    Box::pin(async move { opened(sender) })
}

/// A sender, opened.
pub fn opened<'a>(sender: impl Sender + 'a) -> Result<Box<dyn Sender + 'a>, Failure> {
    Ok(Box::new(sender))
}

/// Parts cut by a platform's own rules, as the [`Part`]s the driver hands out (the
/// text sent is the source).
pub fn as_parts(texts: Vec<String>) -> Vec<Part> {
    texts
        .into_iter()
        .map(|text| Part {
            rendered: text.clone(),
            source: text,
        })
        .collect()
}

/// A required variable's value, or its other name's as Hermes reads it.
pub fn setting<'a>(env: &'a Environment, var: &str) -> Option<&'a str> {
    let alias = platforms::ALL
        .iter()
        .flat_map(|d| d.aliases)
        .find(|(name, _)| *name == var)
        .map(|(_, alias)| *alias);
    env.get(var).or_else(|| alias.and_then(|a| env.get(a)))
}

/// The values of a platform's required variables, in order; the first one missing is a
/// final failure that says what to set. URLs lose a trailing slash.
pub fn settings<'a>(
    env: &'a Environment,
    description: &Description,
) -> Result<Vec<&'a str>, Failure> {
    description
        .required
        .iter()
        .map(|var| {
            setting(env, var)
                .map(|value| match value.starts_with("http") {
                    true => value.trim_end_matches('/'),
                    false => value,
                })
                .ok_or_else(|| {
                    Failure::Final(format!(
                        "{var} is not set (add it to {})",
                        env.dotenv_hint()
                    ))
                })
        })
        .collect()
}

/// A platform's API base: its variable when set, else the default, without a trailing
/// slash.
pub fn base<'a>(env: &'a Environment, description: &Description) -> &'a str {
    match description.base {
        Some(base) => env.get(base.var).unwrap_or(base.default),
        None => "",
    }
    .trim_end_matches('/')
}

/// Bots may upload files up to 50 MB.
const MAX_UPLOAD: u64 = 50 * 1024 * 1024;

/// Reads a `MEDIA:` file, refusing what should never leave the machine by accident.
pub fn read_media(path: &Path) -> Result<(String, Vec<u8>), Failure> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file")
        .to_string();
    let lower = name.to_ascii_lowercase();
    let secret = lower == ".env"
        || lower.starts_with("id_rsa")
        || lower.starts_with("id_ed25519")
        || lower.ends_with(".pem")
        || lower.ends_with(".key")
        || matches!(
            lower.as_str(),
            ".netrc" | ".pgpass" | "credentials" | "authorized_keys"
        );
    if secret {
        return Err(Failure::Final(format!(
            "MEDIA file {} looks like a credential; not sent",
            path.display()
        )));
    }
    let unreadable = |e: std::io::Error| {
        Failure::Final(format!("MEDIA file {} cannot be read: {e}", path.display()))
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() || meta.len() > MAX_UPLOAD {
        return Err(Failure::Final(format!(
            "MEDIA file {} is not a regular file under 50 MB; not sent",
            path.display()
        )));
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    Ok((name, bytes))
}

/// One item of a message, in the order the outbox counts them.
enum Item<'m> {
    Text(&'m Part),
    File(&'m Path),
}

/// Sends a message to one chat, skipping the first `skip` items (parts, then files)
/// that an earlier attempt already delivered. Returns how many items exist in all; on
/// failure, the failure and how many items were delivered.
pub async fn send_chat(
    shared: &Shared,
    env: &Environment,
    platform: Platform,
    (chat, thread): (&str, Option<&str>),
    message: &Message,
    skip: usize,
) -> Result<usize, (Failure, usize)> {
    let description = platforms::describe(platform)
        .ok_or_else(|| (Failure::Final(super::cannot_send(platform.as_str())), skip))?;
    let settings = settings(env, description).map_err(|f| (f, skip))?;
    let parts = description.parts(&message.text, &message.media);
    let files = description.files(&message.media);
    let total = parts.len() + files.len();
    if skip >= total {
        return Ok(total);
    }
    let chat = super::channels::resolve(shared, env, description, chat)
        .await
        .map_err(|f| (f, skip))?;
    let pace = description.pacing.map_or(Pace::Free, Pace::Chat);
    let open = Open {
        env,
        settings,
        base: base(env, description),
        chat: &chat,
        thread,
        text: &message.text,
        media: &message.media,
        silent: message.silent,
        link: Link::new(shared, platform.as_str(), &chat, pace),
    };
    let mut sender = (description.open)(open).await.map_err(|f| (f, skip))?;
    let texts = parts.iter().map(Item::Text);
    let items = texts.chain(files.iter().map(|path| Item::File(Path::new(path))));
    let mut sent = Ok(total);
    for (index, item) in items.enumerate().skip(skip) {
        let result = match item {
            Item::Text(part) => sender.text(index, part).await,
            Item::File(path) => sender.file(index, path).await,
        };
        if let Err(failure) = result {
            sent = Err((failure, index));
            break;
        }
    }
    sender.close().await;
    sent
}
