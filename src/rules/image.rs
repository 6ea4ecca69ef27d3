//! Findings about the image itself, whatever the node: its `User`.
//!
//! The engine resolves a `User` name in the image's own `/etc/passwd` (a group name in its `/etc/group`) before
//! the container's first process runs, and refuses to start it when the name is not there: Docker and Podman
//! say "unable to find user NAME: no matching entries in passwd file" (moby/moby#22323). A numeric uid needs no
//! entry. `docs/container-images.md` ("The image's user") says more.

use crate::facts::image::{ImageFacts, UserProblem};
use crate::findings::{Code, Finding};

/// `container-user-unknown` (the container does not start) or `container-user-unchecked` (a file was not read, so
/// neither the user nor what it may open, `/dev/nvidia*` included, was checked).
pub fn user(image: &ImageFacts) -> Option<Finding> {
    let shown = if image.user.is_empty() {
        "root"
    } else {
        image.user.as_str()
    };
    match image.user_problem.as_ref()? {
        UserProblem::Unknown { name, file } => Some(
            Finding::new(
                Code::ContainerUserUnknown,
                format!("the image's User {shown:?} names {name:?}, which its {file} does not list: the engine refuses to start the container"),
                format!(
                    "add the user to the image (`RUN useradd {name}` before `USER`), or run it with a numeric \
                     `--user UID:GID` (`docker run --user 1000:1000`), which needs no {file} entry"
                ),
            )
            .because(format!("the image's config: User {shown:?}"))
            .because(format!("{file} inside the image has no entry named {name:?}")),
        ),
        UserProblem::Unread { file, reason } => Some(
            Finding::new(
                Code::ContainerUserUnchecked,
                format!(
                    "the image's {file} was not read ({reason}): its User {shown:?} and whether that user may open \
                     /dev/nvidia* are not checked"
                ),
                "check it by hand: `docker run --rm --entrypoint id IMAGE` prints the user the container runs as; \
                 `ls -l /dev/nvidia*` on the node shows who may open the GPUs",
            )
            .because(format!("{file} inside the image: {reason}")),
        ),
    }
}
