import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import { adjacencyGraphs, dictionary } from '@zxcvbn-ts/language-common';

/**
 * Common and breached-pattern passwords (ASVS 2.1.7), checked offline with zxcvbn-ts and its common
 * list (the most used passwords of public breaches, plus keyboard patterns, repeats, sequences and
 * dates). A password needs score 3 (about 10^8 guesses): the ones attackers try first are refused.
 */
const MIN_SCORE = 3;

/**
 * Only the first 64 characters are checked: the check runs on the event loop, about 1 ms per character
 * (200 characters: 160 ms); a password whose first 64 characters are hard to guess is.
 */
const CHECKED_LENGTH = 64;

let checker: ZxcvbnFactory | undefined;
/** Built on first use: the ranked dictionaries take a few tens of milliseconds. */
function zxcvbn(): ZxcvbnFactory {
  checker ??= new ZxcvbnFactory({
    dictionary,
    graphs: adjacencyGraphs,
    useLevenshteinDistance: true,
    maxLength: CHECKED_LENGTH,
  });
  return checker;
}

/** Why a password is refused, in words, per zxcvbn's warning. */
const WHY: Record<string, string> = {
  topTen: 'it is one of the ten most used passwords',
  topHundred: 'it is one of the hundred most used passwords',
  common: 'it is on the list of passwords found most often in breaches',
  similarToCommon: 'it is a small change to a password found often in breaches',
  wordByItself: 'it is a common word by itself',
  namesByThemselves: 'it is a name by itself',
  commonNames: 'it is made of common names',
  straightRow: 'it is a row of keys on a keyboard',
  keyPattern: 'it is a keyboard pattern',
  simpleRepeat: 'it repeats one character',
  extendedRepeat: 'it repeats a short pattern',
  sequences: 'it is a sequence such as abcdef or 654321',
  recentYears: 'it is built on a recent year',
  dates: 'it is built on a date',
  userInputs: 'it contains your email',
};

/**
 * Why a password is too easy to guess, or undefined when it is not. `context` (the email) counts against it.
 * Callers check it only after the link or the current password (tens of milliseconds of CPU per call).
 */
export function weakPasswordProblem(password: string, context: string[] = []): string | undefined {
  const result = zxcvbn().check(password, context);
  if (result.score >= MIN_SCORE) return undefined;
  const why = (result.feedback.warning && WHY[result.feedback.warning]) || 'it is too easy to guess';
  return `Choose another password: ${why}. A few unrelated words make a strong one.`;
}
