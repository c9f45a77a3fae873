<?php

namespace App\Http\Controllers;

use Illuminate\Http\Request;
use Illuminate\Routing\Controller;

/** A form in a session: GET shows it with the session's CSRF token, POST (the token checked by the
 * middleware, 419 without it) keeps the note in the session and says how many it holds. */
class FormController extends Controller
{
    public function show()
    {
        return view('form', ['notes' => count(session('notes', []))]);
    }

    public function submit(Request $request)
    {
        $note = (string) $request->input('note', '');
        if ($note === '') {
            return response('loadcmp laravel: a note is needed', 422);
        }
        $request->session()->push('notes', $note);
        return response('loadcmp laravel: noted ' . count(session('notes', [])) . ' in this session');
    }
}
