<?php

namespace App\Http\Controllers;

use Illuminate\Routing\Controller;

/** The article's page (sleep, then a view) and the same view without the sleep (framework cost alone). */
class PageController extends Controller
{
    public function sleep()
    {
        $ms = 500;
        usleep($ms * 1000);
        return view('page', ['title' => 'slept', 'ms' => $ms]);
    }

    public function hello()
    {
        return view('page', ['title' => 'hello', 'ms' => 0]);
    }
}
