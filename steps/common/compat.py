"""Small compatibility shims for the pinned Tango 1.3.2, applied when ``steps`` is imported."""
from __future__ import annotations

from tango.step_info import GitMetadata


def _git_metadata_tolerating_no_remote(cls):
    # Tango records the commit of the working repo with each run, but crashes when the repo has no
    # remote named "origin" (a fresh `git init`, or a clone whose remote has another name).
    from git import InvalidGitRepositoryError, Repo

    try:
        repo = Repo(".")
        commit = str(repo.commit())
    except (InvalidGitRepositoryError, ValueError):
        return None
    remote = repo.remotes[0].url if repo.remotes else None
    return cls(commit=commit, remote=remote)


# EnvironmentMetadata's dataclass field captured the classmethod itself as its default factory,
# so replacing the attribute is not enough: swap the code of the function it wraps.
GitMetadata.check_for_repo.__func__.__code__ = _git_metadata_tolerating_no_remote.__code__
